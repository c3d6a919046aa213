package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestErrorsNameTheNextStep runs the real binaries into the mistakes a
// newcomer makes (issue 25) and checks that each message says what to type
// or do instead, and the exit status.
func TestErrorsNameTheNextStep(t *testing.T) {
	t.Parallel()
	dir := testDir(t)
	folder := filepath.Join(dir, "folder")
	file := filepath.Join(dir, "afile")
	junk := filepath.Join(dir, "junk.txt")
	for _, p := range []struct {
		path string
		dir  bool
	}{{folder, true}, {file, false}, {junk, false}} {
		var err error
		if p.dir {
			err = os.Mkdir(p.path, 0o755)
		} else {
			err = os.WriteFile(p.path, []byte("not a database\n"), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	db := filepath.Join(dir, "memory.db")
	tests := []struct {
		name  string
		bin   string
		args  []string
		stdin string
		code  int
		want  []string // each in stdout+stderr
	}{
		{"db names a folder", serverBin, []string{"--db", folder}, "", 2,
			[]string{"is a folder", "Try: --db " + filepath.Join(folder, "memory.db")}},
		{"db under a file", serverBin, []string{"--db", filepath.Join(file, "m.db")}, "", 2,
			[]string{file + ", which is a file, not a folder", "Try: --db " + filepath.Join(dir, "m.db")}},
		{"verify a missing file", serverBin, []string{"verify", "--db", filepath.Join(dir, "missing.db")}, "", 2,
			[]string{"no file at " + filepath.Join(dir, "missing.db"), "verify checks an existing memory database", "ls " + dir}},
		{"verify a file that is not SQLite", serverBin, []string{"verify", "--db", junk}, "", 2,
			[]string{junk + " is not a SQLite database", "verify checks an existing memory database"}},
		{"call an unknown tool", serverBin, []string{"call", "--db", db, "read_qury", "{}"}, "", 2,
			[]string{`no tool named "read_qury"`, "append_event", "list_tables", "Did you mean read_query?"}},
		{"unknown flag", serverBin, []string{"--dbb", db}, "", 2,
			[]string{"unknown flag --dbb; did you mean --db?", "Try: mcp-sqlite-memory --help"}},
		{"no such table", serverBin, []string{"call", "--db", db, "read_query", `{"query":"SELECT * FROM nope"}`}, "", 1,
			[]string{"SQL_ERROR: no such table: nope; list_tables shows the tables"}},
		{"worker help", workerBin, []string{"--help"}, "", 0,
			[]string{"run the server instead", "mcp-sqlite-memory --db PATH"}},
		{"worker with an argument", workerBin, []string{"--verbose"}, "", 2,
			[]string{`unexpected argument "--verbose"`, "run the server instead"}},
		{"worker version", workerBin, []string{"--version"}, "", 0,
			[]string{"mcp-sqlite-memory-worker "}},
		// A piped request (a fuzzer's) keeps its JSON frame and status 0.
		{"worker with a bad piped request", workerBin, nil, "hello\n", 0,
			[]string{`"ok":false`, `"code":"INVALID_ARGUMENT"`}},
	}
	// On a terminal (util-linux's script gives the worker one) a bad
	// request gets words and a failing status.
	if script, err := exec.LookPath("script"); err == nil && runtime.GOOS == "linux" {
		tests = append(tests, struct {
			name  string
			bin   string
			args  []string
			stdin string
			code  int
			want  []string
		}{"worker with a bad request on a terminal", script, []string{"-qec", workerBin, os.DevNull}, "hello\n\x04", 2,
			[]string{"not a worker request", "run the server instead"}})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(tc.bin, tc.args...)
			cmd.Stdin = strings.NewReader(tc.stdin)
			out, err := cmd.CombinedOutput()
			if code := exitCode(err); code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("output lacks %q:\n%s", w, bounded(string(out)))
				}
			}
		})
	}
}

// TestDBPathWarnings: a relative --db, or one starting with a literal "~"
// (an MCP host's JSON config does not expand it), gets one warning at start
// that says what it resolved to and how to write it.
func TestDBPathWarnings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, db string
		want     []string
	}{
		{"relative", "memory.db", []string{`--db "memory.db" is relative`, "Write an absolute path"}},
		{"literal tilde", "~/agent/memory.db", []string{`--db "~/agent/memory.db" starts with a literal "~"`, `folder named "~"`, "Write the path in full"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := testDir(t)
			// The host closes stdin at once: the server starts, then ends.
			cmd := exec.Command(serverBin, "--db", tc.db)
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("serve: %v\n%s", err, bounded(string(out)))
			}
			text := string(out)
			resolved, _ := filepath.Abs(filepath.Join(dir, tc.db))
			for _, w := range append(tc.want, "resolved to "+resolved) {
				if !strings.Contains(text, w) {
					t.Errorf("log lacks %q:\n%s", w, bounded(text))
				}
			}
			if n := strings.Count(text, "[WARN]"); n != 1 {
				t.Errorf("%d warnings, want 1:\n%s", n, bounded(text))
			}
		})
	}
}
