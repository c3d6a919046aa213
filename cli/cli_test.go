package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
		{name: "subcommand help", args: []string{"verify", "-h"}, code: 0, stdout: "Exit 0: intact; 1: broken; 2: not a usable memory database."},
		{name: "no database", args: nil, code: 2, stderr: "no database given"},
		{name: "bad flag value", args: []string{"--db", "x.db", "--max-workers", "0"}, code: 2, stderr: "Try: --max-workers 4"},
		{name: "stray argument", args: []string{"--db", "x.db", "extra"}, code: 2, stderr: `unexpected argument "extra"`},
		{name: "sample-db", args: []string{"sample-db", shop}, code: 0, stdout: "wrote the sample shop database", makesDB: shop},
		{name: "sample-db again", args: []string{"sample-db", shop}, code: 1, stderr: "not empty"},
		{name: "sample-db without path", args: []string{"sample-db"}, code: 2, stderr: "sample-db takes one path"},
		{name: "verify a database without a chain", args: []string{"verify", "--db", shop}, code: 2, stderr: shop},
		{name: "verify a text file", args: []string{"verify", "--db", text}, code: 2, stderr: "not a SQLite database"},
		{name: "verify a missing file", args: []string{"verify", "--db", filepath.Join(dir, "none.db")}, code: 2},
		{name: "restore without snapshot", args: []string{"restore", "--db", shop}, code: 2, stderr: "restore takes the snapshot file"},
		{name: "restore from a text file", args: []string{"restore", "--db", filepath.Join(dir, "r.db"), text}, code: 1, stderr: "is not a SQLite database"},
		{name: "call with bad JSON", args: []string{"call", "--db", shop, "read_query", "{"}, code: 2, stderr: "the arguments must be a JSON object"},
		{name: "demo with bad flag", args: []string{"demo", "--kept", "x"}, code: 2, stderr: "Try: mcp-sqlite-memory demo --keep"},
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
