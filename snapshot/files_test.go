package snapshot

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// dirNames lists dir's files, sorted.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir) // sorted by name
	if err != nil {
		t.Fatal(err)
	}
	return slices.Collect(func(yield func(string) bool) {
		for _, e := range entries {
			if !yield(e.Name()) {
				return
			}
		}
	})
}

func TestSnapshotRotation(t *testing.T) {
	dir := t.TempDir()
	// The oldest was opened by hand, which left its WAL companions; they
	// go with it. A newer one's stay.
	names := []string{"m.20260101T000000.000Z.db", "m.20260101T000000.000Z.db-wal", "m.20260101T000000.000Z.db-shm",
		"m.20260101T000001.000Z.db", "m.20260101T000002.000Z.db", "m.20260101T000002.000Z.db-shm", "m.notes.txt", "other.20260101T000000.000Z.db"}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	Rotate(dir, "m", 2, "", hclog.NewNullLogger())
	entries, _ := os.ReadDir(dir)
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if strings.Join(got, " ") != "m.20260101T000001.000Z.db m.20260101T000002.000Z.db m.20260101T000002.000Z.db-shm m.notes.txt other.20260101T000000.000Z.db" {
		t.Fatalf("left %v", got)
	}
}

func TestIsName(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"memory.20261130T101500.123Z.db", true},
		{"memory.20261130T101500.123Z.pre-restore.db", true},
		{"memory.20261130T101500.123Z.post-restore.db", false},
		{"memory.20261130T101500Z.db", false},
		{"memory.abc.partial", false},
		{"other.20261130T101500.123Z.db", false},
		{"memory.20261130T101500.123Z.db-wal", false},
		{"memory.pre-restore.db", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsName(tt.name, "memory"); got != tt.want {
				t.Fatalf("IsName(%q) = %v, want %v", tt.name, got, tt.want)
			}
		})
	}
}

// TestRetentionCountsSafetySnapshots: restore's safety snapshots are
// snapshots to retention, in time order with the others.
func TestRetentionCountsSafetySnapshots(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"w.20260101T000000.000Z.db", "w.20260102T000000.000Z.pre-restore.db", "w.20260103T000000.000Z.db"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	Rotate(dir, "w", 2, "", hclog.NewNullLogger())
	if got := dirNames(t, dir); !slices.Equal(got, []string{"w.20260102T000000.000Z.pre-restore.db", "w.20260103T000000.000Z.db"}) {
		t.Fatalf("after keeping 2: %v", got)
	}
	Rotate(dir, "w", 1, "", hclog.NewNullLogger())
	if got := dirNames(t, dir); !slices.Equal(got, []string{"w.20260103T000000.000Z.db"}) {
		t.Fatalf("after keeping 1: %v", got)
	}
}

// TestRotationKeepsWhatItWrote: five snapshot-named files dated in the
// future (a clock set back, or planted) neither push out the snapshot just
// written nor count toward retention; they are reported and left alone,
// while older snapshots rotate as before.
func TestRotationKeepsWhatItWrote(t *testing.T) {
	now := time.Now().UTC()
	name := func(d time.Duration, tag string) string { return FileName("w", tag, now.Add(d)) }
	future := []string{name(24*time.Hour, ""), name(48*time.Hour, ""), name(72*time.Hour, UndoTag), name(96*time.Hour, ""), name(365*24*time.Hour, PreRestoreTag)}
	old := []string{name(-3*time.Hour, ""), name(-2*time.Hour, UndoTag), name(-time.Hour, "")}
	within := name(30*time.Second, "") // another server's, inside the skew
	tests := []struct {
		name      string
		keep      int
		kept      []string // besides the one just written
		withinToo bool
	}{
		{"keep 1 keeps only the one just written", 1, nil, false},
		{"keep 3 keeps the two newest older ones", 3, old[1:], false},
		{"keep 10 removes nothing", 10, old, false},
		{"a name inside the skew counts as a snapshot", 2, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			files := append(append(slices.Clone(future), old...), name(0, ""))
			if tt.withinToo {
				files = append(files, within)
			}
			for _, n := range files {
				if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			just := filepath.Join(dir, name(0, ""))
			foreign := Rotate(dir, "w", tt.keep, just, hclog.NewNullLogger())
			want := append(append(slices.Clone(future), tt.kept...), name(0, ""))
			if tt.withinToo {
				want = append(want, within)
			}
			slices.Sort(want)
			if got := dirNames(t, dir); !slices.Equal(got, want) {
				t.Fatalf("left %v\nwant %v", got, want)
			}
			if got := slices.Sorted(slices.Values(foreign)); !slices.Equal(got, slices.Sorted(slices.Values(future))) {
				t.Fatalf("reported %v, want the future-dated %v", foreign, future)
			}
		})
	}
}

func TestNewPartialName(t *testing.T) {
	a, b := NewPartialName("memory"), NewPartialName("memory")
	if a == b || !strings.HasPrefix(a, "memory.") || !strings.HasSuffix(a, PartialSuffix) || len(a) != len("memory.")+16+len(PartialSuffix) {
		t.Fatalf("names %q %q", a, b)
	}
}
