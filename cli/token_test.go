package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

func TestTokenCommand(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens")
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Run(context.Background(), args, Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }})
		return code, out.String(), errb.String()
	}
	code, out, _ := run("token", "add", "alice", "--auth-tokens", file)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || !strings.HasPrefix(lines[len(lines)-1], "msm_") {
		t.Fatalf("add: %d %q", code, out)
	}
	tests := []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"token", "list", "--auth-tokens=" + file}, 0, "memory:read,memory:write,memory:destructive  20", ""},
		{[]string{"token", "add", "reader", "--scopes", "memory:read", "--auth-tokens", file}, 0, "scopes memory:read)", ""},
		{[]string{"token", "list", "--auth-tokens", file}, 0, "reader  memory:read   ", ""},
		{[]string{"token", "scopes", "reader", "memory:write,memory:read", "--auth-tokens", file}, 0, "may now use the scopes memory:read,memory:write", ""},
		{[]string{"token", "list", "--auth-tokens", file}, 0, "reader  memory:read,memory:write", ""},
		{[]string{"token", "scopes", "reader", "memory:all", "--auth-tokens", file}, 2, "", `unknown scope "memory:all"`},
		{[]string{"token", "scopes", "nobody", "memory:read", "--auth-tokens", file}, 1, "", `no token for agent "nobody"`},
		{[]string{"token", "scopes", "reader", "--auth-tokens", file}, 2, "", "takes an agent name and a list"},
		{[]string{"token", "add", "x", "--scopes", "", "--auth-tokens", file}, 2, "", "no scope given"},
		{[]string{"token", "list", "--scopes", "memory:read", "--auth-tokens", file}, 2, "", "--scopes goes with token add"},
		{[]string{"token", "add", "oauth:ci", "--auth-tokens", file}, 2, "", "starts with oauth:"},
		{[]string{"token", "add", "alice", "--auth-tokens", file}, 1, "", "revoke it first"},
		{[]string{"token", "add", "a b", "--auth-tokens", file}, 2, "", "must be 1 to 64 letters"},
		{[]string{"token", "add", "--auth-tokens", file}, 2, "", "takes one agent name"},
		{[]string{"token", "add", "bob"}, 2, "", "needs --auth-tokens"},
		{[]string{"token", "rotate", "bob", "--auth-tokens", file}, 2, "", "unknown token command"},
		{[]string{"token", "list", "--db", "x", "--auth-tokens", file}, 2, "", "unknown flag --db"},
		{[]string{"token", "revoke", "bob", "--auth-tokens", file}, 1, "", `no token for agent "bob"`},
		{[]string{"token", "revoke", "alice", "--auth-tokens", file}, 0, "revoked the token of agent alice", ""},
		{[]string{"token", "--help"}, 0, "Usage: mcp-sqlite-memory token", ""},
	}
	for _, tt := range tests {
		code, out, errText := run(tt.args...)
		if code != tt.code || !strings.Contains(out, tt.stdout) || !strings.Contains(errText, tt.stderr) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d, %q, %q", tt.args, code, out, errText, tt.code, tt.stdout, tt.stderr)
		}
	}
}
