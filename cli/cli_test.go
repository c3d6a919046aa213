package cli

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server"
)

func TestRun(t *testing.T) {
	dir := t.TempDir()
	shop := filepath.Join(dir, "shop.db")
	text := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(text, []byte("not a database"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		code    int
		stdout  string
		stderr  string
		makesDB string
	}{
		{name: "help", args: []string{"help"}, code: 0, stdout: "Usage:"},
		{name: "flag help", args: []string{"--help"}, code: 0, stdout: "Flags (each also read from its environment variable"},
		{name: "subcommand help", args: []string{"verify", "-h"}, code: 0, stdout: "Exit 0: intact; 1: broken; 2: not a usable memory database or export."},
		{name: "no database", args: nil, code: 2, stderr: "no database given"},
		{name: "bad flag value", args: []string{"--db", "x.db", "--max-workers", "0"}, code: 2, stderr: "Try: --max-workers 4"},
		{name: "stray argument", args: []string{"--db", "x.db", "extra"}, code: 2, stderr: `unexpected argument "extra"`},
		{name: "sample-db", args: []string{"sample-db", shop}, code: 0, stdout: "wrote the sample shop database", makesDB: shop},
		{name: "sample-db again", args: []string{"sample-db", shop}, code: 1, stderr: "not empty"},
		{name: "sample-db without path", args: []string{"sample-db"}, code: 2, stderr: "sample-db takes one path"},
		{name: "verify a database without a chain", args: []string{"verify", "--db", shop}, code: 2, stderr: shop},
		{name: "verify a text file", args: []string{"verify", "--db", text}, code: 2, stderr: "not a SQLite database"},
		{name: "verify a missing file", args: []string{"verify", "--db", filepath.Join(dir, "none.db")}, code: 2},
		{name: "export help", args: []string{"export", "--help"}, code: 0, stdout: "mcp-sqlite-memory export --db memory.db --out memory.jsonl"},
		{name: "import help", args: []string{"help", "import"}, code: 0, stdout: "Usage: mcp-sqlite-memory import --db NEW FILE"},
		{name: "export without a chain", args: []string{"export", "--db", shop}, code: 2, stderr: "no memory_events table"},
		{name: "export stray argument", args: []string{"export", "--db", shop, "x"}, code: 2, stderr: `unexpected argument "x"`},
		{name: "export --out without value", args: []string{"export", "--db", shop, "--out"}, code: 2, stderr: "--out needs a value"},
		{name: "import without file", args: []string{"import", "--db", filepath.Join(dir, "n.db")}, code: 2, stderr: "import takes the export file"},
		{name: "import a missing file", args: []string{"import", "--db", filepath.Join(dir, "n.db"), filepath.Join(dir, "none.jsonl")}, code: 2, stderr: "none.jsonl"},
		{name: "import a text file", args: []string{"import", "--db", filepath.Join(dir, "n2.db"), text}, code: 1, stderr: "line 1: not an export line"},
		{name: "verify --jsonl a text file", args: []string{"verify", "--jsonl", text}, code: 2, stderr: "line 1: not an export line"},
		{name: "verify --jsonl empty stdin", args: []string{"verify", "--jsonl", "-"}, code: 0, stdout: `{"ok": true, "events": 0, "head_id": 0, "head_hash": "0000`},
		{name: "restore without snapshot", args: []string{"restore", "--db", shop}, code: 2, stderr: "restore takes the snapshot file"},
		{name: "restore from a text file", args: []string{"restore", "--db", filepath.Join(dir, "r.db"), text}, code: 1, stderr: "is not a SQLite database"},
		{name: "call with bad JSON", args: []string{"call", "--db", shop, "read_query", "{"}, code: 2, stderr: "the arguments must be a JSON object"},
		{name: "verify --rqlite and --db", args: []string{"verify", "--rqlite", "127.0.0.1:4001", "--db", shop}, code: 2, stderr: "--db and --rqlite both given"},
		{name: "export --rqlite bad node", args: []string{"export", "--rqlite", "ftp://h:4001"}, code: 2, stderr: "must be http or https"},
		{name: "import --rqlite without file", args: []string{"import", "--rqlite", "127.0.0.1:4001"}, code: 2, stderr: "import --rqlite http://127.0.0.1:4001 memory.jsonl"},
		{name: "import --rqlite a missing file", args: []string{"import", "--rqlite", "127.0.0.1:4001", filepath.Join(dir, "none.jsonl")}, code: 2, stderr: "none.jsonl"},
		{name: "call --rqlite with bad JSON", args: []string{"call", "--rqlite", "127.0.0.1:4001", "read_query", "{"}, code: 2, stderr: "the arguments must be a JSON object"},
		{name: "verify help names --rqlite", args: []string{"verify", "--help"}, code: 0, stdout: "mcp-sqlite-memory verify --rqlite http://127.0.0.1:4001,http://127.0.0.1:4011"},
		{name: "demo with bad flag", args: []string{"demo", "--kept", "x"}, code: 2, stderr: "Try: mcp-sqlite-memory demo --keep"},
		{name: "version", args: []string{"version"}, code: 0, stdout: "mcp-sqlite-memory " + server.Version() + "\n"},
		{name: "--version", args: []string{"--version"}, code: 0, stdout: "mcp-sqlite-memory " + server.Version() + "\n"},
		{name: "--version after flags", args: []string{"--db", "x.db", "-v", "--version"}, code: 0, stdout: "mcp-sqlite-memory " + server.Version() + "\n"},
		{name: "version with an argument", args: []string{"version", "x"}, code: 2, stderr: "version takes no arguments"},
		{name: "help lists eval", args: []string{"--help"}, code: 0, stdout: "mcp-sqlite-memory eval --scripted              the analytics tasks, scripted (a model: mcp-sqlite-memory-eval)"},
		{name: "help SUBCOMMAND", args: []string{"help", "restore"}, code: 0, stdout: "Usage: mcp-sqlite-memory restore --db PATH SNAPSHOT"},
		{name: "help of nothing known", args: []string{"help", "nope"}, code: 2, stderr: `no help for "nope"`},
		{name: "ui help", args: []string{"ui", "--help"}, code: 0, stdout: "Usage: mcp-sqlite-memory ui --db PATH [--addr 127.0.0.1:0]"},
		{name: "ui without database", args: []string{"ui"}, code: 2, stderr: "no database given"},
		{name: "ui on a public address", args: []string{"ui", "--db", shop, "--addr", "0.0.0.0:0"}, code: 2, stderr: "not a loopback address"},
		{name: "ui on a name", args: []string{"ui", "--db", shop, "--addr", "example.com:80"}, code: 2, stderr: "not a loopback address"},
		{name: "ui without a chain", args: []string{"ui", "--db", shop}, code: 2, stderr: "no memory_events table"},
		{name: "ui of a missing file", args: []string{"ui", "--db", filepath.Join(dir, "none.db")}, code: 2, stderr: "none.db"},
		{name: "help after flags", args: []string{"call", "--db", "x.db", "--help"}, code: 0, stdout: "Usage: mcp-sqlite-memory call --db PATH"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut strings.Builder
			code := Run(context.Background(), tt.args, Env{
				Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut,
				Getenv: func(string) string { return "" },
			})
			if code != tt.code || !strings.Contains(out.String(), tt.stdout) || !strings.Contains(errOut.String(), tt.stderr) {
				t.Fatalf("exit %d (want %d)\nstdout: %q (want %q)\nstderr: %q (want %q)", code, tt.code, out.String(), tt.stdout, errOut.String(), tt.stderr)
			}
			if tt.makesDB != "" {
				if fi, err := os.Stat(tt.makesDB); err != nil || fi.Size() == 0 {
					t.Fatalf("%s not written: %v", tt.makesDB, err)
				}
			}
		})
	}
}

func run(args ...string) (code int, stdout, stderr string) {
	var out, errOut strings.Builder
	code = Run(context.Background(), args, Env{
		Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut,
		Getenv: func(string) string { return "" },
	})
	return code, out.String(), errOut.String()
}

// goFlagLayout is Go's raw flag.PrintDefaults layout ("  -db string").
var goFlagLayout = regexp.MustCompile(`(?m)^  -[a-z-]+ (string|int|value)$`)

// TestSubcommandHelpLayout: the top-level help lists every subcommand, and
// every subcommand's help, however asked for, has the same layout.
func TestSubcommandHelpLayout(t *testing.T) {
	_, top, _ := run("--help")
	for name := range subcommands {
		t.Run(name, func(t *testing.T) {
			if !strings.Contains(top, "  mcp-sqlite-memory "+name+" ") {
				t.Errorf("the top-level help does not list %s:\n%s", name, top)
			}
			var texts []string
			for _, args := range [][]string{{name, "--help"}, {name, "-h"}, {"help", name}} {
				code, out, errOut := run(args...)
				if code != 0 || errOut != "" {
					t.Fatalf("%v: exit %d, stderr %q", args, code, errOut)
				}
				texts = append(texts, out)
			}
			if texts[0] != texts[1] || texts[0] != texts[2] {
				t.Fatalf("--help, -h and help %s differ:\n%s\n---\n%s\n---\n%s", name, texts[0], texts[1], texts[2])
			}
			text := texts[0]
			usage, rest, _ := strings.Cut(text, "\n\n")
			if !strings.HasPrefix(usage, "Usage: mcp-sqlite-memory "+name) || strings.Contains(usage, "\n") {
				t.Errorf("first line is not one usage line: %q", usage)
			}
			if !strings.Contains(rest, "\nExamples:\n  mcp-sqlite-memory ") && !strings.Contains(rest, "\nExamples:\n  echo ") {
				t.Errorf("no examples section:\n%s", text)
			}
			if strings.Contains(rest, "Flags:") && !regexp.MustCompile(`\nFlags:\n(  -.*\n|  \(.*\n)+\n`).MatchString(rest) {
				t.Errorf("flags section not in the common layout:\n%s", text)
			}
			if goFlagLayout.MatchString(text) {
				t.Errorf("Go's raw flag layout leaked into the help:\n%s", text)
			}
		})
	}
}

// TestEvalHelpListsEveryFlag: eval's help is generated from its flag set,
// so it cannot miss a flag.
func TestEvalHelpListsEveryFlag(t *testing.T) {
	_, text, _ := run("eval", "--help")
	fs, _ := newEvalFlags()
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		n++
		prefix := "  --"
		if len(f.Name) == 1 {
			prefix = "  -"
		}
		if !strings.Contains(text, prefix+f.Name+" ") {
			t.Errorf("eval --help lacks %s%s:\n%s", prefix, f.Name, text)
		}
	})
	if n < 5 {
		t.Fatalf("only %d eval flags seen", n)
	}
}
