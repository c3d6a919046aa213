package replicate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestCheckListed(t *testing.T) {
	dir := t.TempDir()
	mem := filepath.Join(dir, "memory.db")
	audit := filepath.Join(dir, "audit.db")
	shop := filepath.Join(dir, "shop.db")
	link := filepath.Join(dir, "link")
	for _, f := range []string{mem, shop} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	type check struct {
		name   string
		listed []string
		want   []string
		err    string // "" = accepted
	}
	var checks []check
	// Only where links work: Windows without the privilege makes none, and
	// Wine 8 makes one it cannot follow. (No t.Log: .ci/windows.sh reads
	// "file.go:N:" lines as failures.)
	if err := os.Symlink(dir, link); err == nil {
		if _, err := os.Stat(filepath.Join(link, "memory.db")); err == nil {
			checks = append(checks, check{"the same file through a symbolic link", []string{filepath.Join(link, "memory.db")}, []string{mem}, ""})
		}
	}
	if runtime.GOOS == "windows" {
		// Windows paths name the same file whatever their case.
		checks = append(checks, check{"the same file in other letters", []string{strings.ToUpper(mem)}, []string{mem}, ""})
	}
	for _, tt := range append(checks, []check{
		{"exactly the memory database", []string{mem}, []string{mem}, ""},
		{"missing", []string{filepath.Join(dir, "other.db")}, []string{mem}, "does not replicate " + mem},
		{"nothing listed by path", nil, []string{mem}, "it lists no database by path"},
		{"one more database", []string{mem, filepath.Join(dir, "other.db")}, []string{mem}, "also lists"},
		{"the audit file only", []string{audit}, []string{audit}, ""},
		{"the read-only database too", []string{audit, shop}, []string{audit}, "lists the read-only database"},
	}...) {
		t.Run(tt.name, func(t *testing.T) {
			err := checkListed("ls.yml", tt.listed, tt.want, shop)
			if tt.err == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ue *UsageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "Try:") {
				t.Fatalf("got %v, want a usage error with %q and a Try: line", err, tt.err)
			}
		})
	}
}

func TestLitestreamMetaDir(t *testing.T) {
	for _, tt := range []struct{ db, want string }{
		{"/data/memory.db", "/data/.memory.db-litestream"},
		{"/data/x/shop-audit.sqlite", "/data/x/.shop-audit.sqlite-litestream"},
	} {
		t.Run(tt.db, func(t *testing.T) {
			if got := litestreamMetaDir(filepath.FromSlash(tt.db)); got != filepath.FromSlash(tt.want) {
				t.Fatalf("got %s, want %s", got, tt.want)
			}
		})
	}
}

// failingWriter fails every write, like a pipe nobody reads.
type failingWriter struct{ n int }

func (f *failingWriter) Write(p []byte) (int, error) {
	f.n++
	return 0, errors.New("broken pipe")
}

func TestLossyWriterNeverFails(t *testing.T) {
	w := &failingWriter{}
	for _, p := range []string{"one line\n", "", "another\n"} {
		t.Run(p, func(t *testing.T) {
			n, err := lossyWriter{w}.Write([]byte(p))
			if n != len(p) || err != nil {
				t.Fatalf("Write(%q) = %d, %v; want %d, nil", p, n, err, len(p))
			}
		})
	}
	if w.n != 3 {
		t.Fatalf("%d writes passed on, want 3", w.n)
	}
}

func TestExecKey(t *testing.T) {
	for text, want := range map[string]bool{
		"exec: mcp-sqlite-memory --db m.db\n":       true,
		"dbs:\n  - path: /m.db\nexec : sleep 1\n":   true,
		"dbs:\n  - path: /m.db\n":                   false,
		"# exec: commented out\n":                   false,
		"dbs:\n  - path: /m.db\n    exec: nested\n": false,
		"logging:\n  stderr: true\nexecutable: x\n": false,
	} {
		t.Run(text, func(t *testing.T) {
			if got := execKey.MatchString(text); got != want {
				t.Fatalf("execKey on %q = %v", text, got)
			}
		})
	}
}

// TestPlanOffAndRefused covers what Plan decides without running
// Litestream: nothing to check without --replicate, and refusals that come
// before Litestream is looked for.
func TestPlanOffAndRefused(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "memory.db")
	for _, tt := range []struct {
		name string
		o    Options
		err  string // "" = planned
	}{
		{"no --replicate", Options{DB: db}, ""},
		{"no --replicate, readonly", Options{DB: db, ReadOnly: true}, ""},
		{"readonly without --audit-db", Options{Config: "ls.yml", DB: db, ReadOnly: true}, "writes nothing to replicate"},
		{"config missing", Options{Config: filepath.Join(dir, "missing.yml"), DB: db}, "cannot read the Litestream config"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Plan(context.Background(), tt.o)
			if tt.err == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				// Off: Start and Close touch nothing.
				if err := r.Start(nil); err != nil {
					t.Fatalf("Start: %v", err)
				}
				if err := r.Close(); err != nil {
					t.Fatalf("Close: %v", err)
				}
				if _, err := os.Stat(litestreamMetaDir(db)); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("Litestream's state folder: %v, want none", err)
				}
				return
			}
			var ue *UsageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "Try:") {
				t.Fatalf("got %v, want a usage error with %q and a Try: line", err, tt.err)
			}
		})
	}
}

func TestWrittenFiles(t *testing.T) {
	abs, err := filepath.Abs("audit.db")
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "memory.db")
	for _, tt := range []struct {
		name string
		o    Options
		want []string
	}{
		{"memory profile: its database", Options{DB: db}, []string{db}},
		{"readonly: the audit file", Options{DB: db, ReadOnly: true, AuditDB: "audit.db"}, []string{abs}},
		{"readonly without audit: nothing", Options{DB: db, ReadOnly: true}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.o.writtenFiles(); !slices.Equal(got, tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}
