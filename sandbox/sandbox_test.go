package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAllowanceEnvRoundTrip(t *testing.T) {
	a := Allowance{DB: "/data/memory.db", SnapshotDir: "/data/memory.snapshots", TempDir: "/tmp/x"}
	name, value, ok := strings.Cut(a.Env(), "=")
	if !ok || name != EnvAllowance {
		t.Fatalf("env entry %q", a.Env())
	}
	got, err := ParseAllowance(value)
	if err != nil || got != a {
		t.Fatalf("round trip: %+v, %v; want %+v", got, err, a)
	}
	for _, bad := range []string{"", "{", `{"db":"relative.db"}`, Off} {
		if _, err := ParseAllowance(bad); err == nil {
			t.Errorf("ParseAllowance(%q) accepted", bad)
		}
	}
}

func TestPermits(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "m.db")
	snaps := filepath.Join(dir, "m.snapshots")
	rw := Allowance{DB: db, SnapshotDir: snaps}
	ro := Allowance{DB: db, ReadOnly: true}
	cases := []struct {
		name     string
		a        Allowance
		db       string
		readOnly bool
		snaps    string
		ok       bool
	}{
		{"same db", rw, db, false, "", true},
		{"same db, snapshots", rw, db, false, snaps, true},
		{"cleaned path", rw, filepath.Join(dir, ".", "m.db"), false, "", true},
		{"other db", rw, filepath.Join(dir, "other.db"), false, "", false},
		{"companion named as db", rw, db + "-wal", false, "", false},
		{"other snapshot folder", rw, db, false, dir, false},
		{"read-only allowance, read-only open", ro, db, true, "", true},
		{"read-only allowance, writable open", ro, db, false, "", false},
		{"snapshots without a folder", ro, db, true, snaps, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.a.Permits(c.db, c.readOnly, c.snaps)
			if (err == nil) != c.ok {
				t.Fatalf("Permits = %v, want ok=%v", err, c.ok)
			}
		})
	}
}

func TestEnterWithoutEnvironment(t *testing.T) {
	t.Setenv(EnvAllowance, "")
	os.Unsetenv(EnvAllowance)
	st, err := Enter(nil, false, nil)
	if err != nil || st.Allowance != nil || st.Off {
		t.Fatalf("Enter with no sandbox variables: %+v, %v", st, err)
	}
}
