package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunRefusesWrongCommandLines: every wrong command line is exit 2 with
// what to type, before any server starts or any request leaves.
func TestRunRefusesWrongCommandLines(t *testing.T) {
	dir := t.TempDir()
	withKey := func(k string) string {
		if k == "ANTHROPIC_API_KEY" {
			return "test-key"
		}
		return ""
	}
	noKey := func(string) string { return "" }
	tests := []struct {
		name   string
		args   []string
		getenv func(string) string
		code   int
		stdout string
		stderr string
	}{
		{"help", []string{"--help"}, noKey, 0, "Usage: mcp-sqlite-memory-eval --model MODEL", ""},
		{"no model", nil, withKey, 2, "", "--model is required\nTry: mcp-sqlite-memory-eval --model claude-sonnet-4-5"},
		{"no key", []string{"--model", "m"}, noKey, 2, "", "ANTHROPIC_API_KEY is not set"},
		{"zero steps", []string{"--model", "m", "--max-steps", "0"}, withKey, 2, "", "--max-steps must be at least 1, got 0"},
		{"keep with db", []string{"--model", "m", "--db", "x.db", "--keep", dir}, withKey, 2, "", "--keep applies only"},
		{"argument", []string{"--model", "m", "extra"}, withKey, 2, "", `unexpected argument "extra"`},
		{"unknown flag", []string{"--scripted"}, withKey, 2, "", "flag provided but not defined: -scripted\nTry: mcp-sqlite-memory-eval --help"},
		{"server is a folder", []string{"--model", "m", "--server", dir}, withKey, 2, "", "--server " + dir + " is not a program"},
		{"unknown task", []string{"--model", "m", "--server", os.Args[0], "--task", "nope"}, withKey, 2, "", `unknown task "nope"`},
		{"missing database", []string{"--model", "m", "--server", os.Args[0], "--db", filepath.Join(dir, "none.db")}, withKey, 2, "", "is not a database file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr strings.Builder
			code := run(context.Background(), tt.args, &stdout, &stderr, tt.getenv)
			if code != tt.code || !strings.Contains(stdout.String(), tt.stdout) || !strings.Contains(stderr.String(), tt.stderr) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %d, %q, %q", code, stdout.String(), stderr.String(), tt.code, tt.stdout, tt.stderr)
			}
		})
	}
}

// TestFindServer: a flagged server wins; without one, the server beside
// this program, else the one on PATH, else a usage error.
func TestFindServer(t *testing.T) {
	if got, err := findServer(os.Args[0]); err != nil || got != os.Args[0] {
		t.Fatalf("flagged: %q, %v", got, err)
	}
	t.Setenv("PATH", t.TempDir()) // nothing there
	if _, err := findServer(""); err == nil || !strings.Contains(err.Error(), "no mcp-sqlite-memory beside this program or on PATH") {
		t.Fatalf("nothing to find: %v", err)
	}
	bin := t.TempDir()
	name := "mcp-sqlite-memory"
	if filepath.Separator == '\\' {
		name += ".exe"
	}
	onPath := filepath.Join(bin, name)
	if err := os.WriteFile(onPath, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	if got, err := findServer(""); err != nil || got != onPath {
		t.Fatalf("on PATH: %q, %v; want %s", got, err, onPath)
	}
}
