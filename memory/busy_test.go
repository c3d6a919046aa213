package memory

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

// A lock held elsewhere makes an error match ErrBusy, whichever binding
// reported it; other failures do not, and the text stays SQLite's.
func TestMarkBusy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "busy.db")
	mustExec(t, rawDB(t, path), "CREATE TABLE t (x)")
	holdWriteLock(t, path)
	impatient := rawDB(t, path+"?_pragma=busy_timeout(0)")
	_, locked := impatient.ExecContext(context.Background(), "INSERT INTO t VALUES (1)")
	if locked == nil {
		t.Fatal("an insert beside a held write lock succeeded")
	}
	_, syntax := impatient.ExecContext(context.Background(), "INSERT INTO")
	tests := []struct {
		name string
		err  error
		busy bool
	}{
		{"modernc SQLITE_BUSY", locked, true},
		{"wrapped", fmt.Errorf("memory: append: %w", locked), true},
		{"rawsqlite SQLITE_BUSY", &rawsqlite.Error{Code: rawsqlite.ResultBusy, Msg: "database is locked"}, true},
		{"rawsqlite SQLITE_LOCKED", fmt.Errorf("verify: %w", &rawsqlite.Error{Code: rawsqlite.ResultLocked, Msg: "database table is locked"}), true},
		{"syntax error", syntax, false},
		{"text that says busy", errors.New("the busy database is locked"), false},
		{"empty content", ErrEmptyContent, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := markBusy(tt.err)
			if errors.Is(got, ErrBusy) != tt.busy {
				t.Fatalf("markBusy(%v) matches ErrBusy: %v, want %v", tt.err, !tt.busy, tt.busy)
			}
			if got.Error() != tt.err.Error() || !errors.Is(got, tt.err) {
				t.Fatalf("markBusy changed the error: %v", got)
			}
		})
	}
	if markBusy(nil) != nil {
		t.Fatal("markBusy(nil) is not nil")
	}
}

// Append waits BusyTimeout for a lock held by another process, then fails
// with ErrBusy.
func TestAppendBusy(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: waits BusyTimeout (5 s); .ci/run's full-size step runs it")
	}
	path := filepath.Join(t.TempDir(), "memory.db")
	s := openStore(t, path)
	holdWriteLock(t, path)
	if _, err := s.Append(context.Background(), "S", "note", "x"); !errors.Is(err, ErrBusy) {
		t.Fatalf("append beside a held lock: %v", err)
	}
}

func TestOpenWhileAnotherProcessWrites(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	s := openStore(t, path)
	s.Close()
	holdWriteLock(t, path)
	// Bootstrapped already: opening reads only, so it does not wait for
	// (or fail on) the lock.
	s2, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatalf("open while another connection holds the write lock: %v", err)
	}
	s2.Close()
}
