package osfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestLocksConflict(t *testing.T) {
	type take func(*os.File) error
	for _, tt := range []struct {
		name          string
		first, second take
		want          error
	}{
		{"two servers share a database", LockShared, LockShared, nil},
		{"restore waits for a server", LockShared, LockExclusive, ErrHeld},
		{"a server waits for restore", LockExclusive, LockShared, ErrHeld},
		{"one Litestream at a time", LockExclusive, LockExclusive, ErrHeld},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "db")
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			// Two opens of one file stand for two processes: both
			// flock and LockFileEx lock per open file.
			a, b := open(t, path), open(t, path)
			if err := tt.first(a); err != nil {
				t.Fatalf("first lock: %v", err)
			}
			if err := tt.second(b); !errors.Is(err, tt.want) {
				t.Fatalf("second lock: %v, want %v", err, tt.want)
			}
			a.Close()
			if err := tt.second(b); err != nil {
				t.Fatalf("second lock once the first file is closed: %v", err)
			}
		})
	}
}

func TestDowngrade(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	a, b := open(t, path), open(t, path)
	if err := LockExclusive(a); err != nil {
		t.Fatal(err)
	}
	if err := LockShared(b); !errors.Is(err, ErrHeld) {
		t.Fatalf("a second server beside the exclusive lock: %v, want ErrHeld", err)
	}
	if err := DowngradeLock(a); err != nil {
		t.Fatalf("downgrade: %v", err)
	}
	if err := LockShared(b); err != nil {
		t.Fatalf("a second server once the lock is shared: %v", err)
	}
	c := open(t, path)
	if err := LockExclusive(c); !errors.Is(err, ErrHeld) {
		t.Fatalf("restore beside the downgraded lock: %v, want ErrHeld", err)
	}
	b.Close()
	if err := LockExclusive(c); !errors.Is(err, ErrHeld) {
		t.Fatalf("restore while the downgraded lock is still held: %v, want ErrHeld", err)
	}
	a.Close()
	if err := LockExclusive(c); err != nil {
		t.Fatalf("restore once both servers closed: %v", err)
	}
}

func open(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
