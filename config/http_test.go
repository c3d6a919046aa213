package config

import (
	"io"
	"strings"
	"testing"
	"time"
)

func TestHTTPConfig(t *testing.T) {
	env := func(string) string { return "" }
	tests := []struct {
		args  []string
		err   string
		hosts string
	}{
		{[]string{"--http", "127.0.0.1:8765"}, "--http needs --auth-tokens FILE or --oauth-issuer URL", ""},
		{[]string{"--http", "8765", "--auth-tokens", "t"}, "must be host:port", ""},
		{[]string{"--http", "0.0.0.0:8765", "--auth-tokens", "t"}, "--allowed-hosts", ""},
		{[]string{"--http", ":8765", "--auth-tokens", "t"}, "--allowed-hosts", ""},
		{[]string{"--http", "127.0.0.1:1", "--auth-tokens", "t", "--tls-cert", "c"}, "go together", ""},
		{[]string{"--http", "127.0.0.1:1", "--auth-tokens", "t", "--allowed-origins", "ide.example.com"}, "not an origin", ""},
		{[]string{"--http", "127.0.0.1:1", "--auth-tokens", "t"}, "", "127.0.0.1,localhost,::1"},
		{[]string{"--http", "0.0.0.0:1", "--auth-tokens", "t", "--allowed-hosts", "a.example, b.example"}, "", "a.example,b.example"},
		{[]string{"--http", "mem.lan:1", "--auth-tokens", "t"}, "", "mem.lan"},
		{[]string{"--http", "127.0.0.1:1", "--oauth-issuer", "https://as.example.com"}, "--oauth-issuer needs --resource URL", ""},
		{[]string{"--http", "127.0.0.1:1", "--resource", "https://m.example.com/mcp", "--auth-tokens", "t"}, "--resource goes with --oauth-issuer", ""},
		{[]string{"--http", "127.0.0.1:1", "--oauth-introspection-secret", "f", "--auth-tokens", "t"}, "goes with --oauth-issuer", ""},
		{[]string{"--http", "127.0.0.1:1", "--oauth-issuer", "https://as.example.com", "--resource", "https://m.example.com/mcp"}, "", "127.0.0.1,localhost,::1"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			c, _, err := Parse(append([]string{"--db", "x.db"}, tt.args...), env, io.Discard)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(c.AllowedHosts, ","); got != tt.hosts {
				t.Fatalf("allowed hosts %q, want %q", got, tt.hosts)
			}
			if c.MaxCallsPerAgent != c.MaxWorkers {
				t.Fatalf("--max-calls-per-agent defaults to %d, want --max-workers %d", c.MaxCallsPerAgent, c.MaxWorkers)
			}
			if c.MaxQueuedPerAgent != 64 || c.QueueWait != 60*time.Second {
				t.Fatalf("--max-queued-per-agent %d, --queue-wait %s: want 64 and 1m0s", c.MaxQueuedPerAgent, c.QueueWait)
			}
		})
	}
}

// The sessions' flags: one agent's share defaults to an eighth of
// --max-sessions, at least one, and may not exceed it.
func TestSessionFlags(t *testing.T) {
	env := func(string) string { return "" }
	for _, tt := range []struct {
		args     []string
		perAgent int
		idle     time.Duration
		err      string
	}{
		{nil, 32, 300 * time.Second, ""},
		{[]string{"--max-sessions", "4"}, 1, 300 * time.Second, ""},
		{[]string{"--max-sessions", "4", "--max-sessions-per-agent", "4", "--session-idle", "2.5"}, 4, 2500 * time.Millisecond, ""},
		{[]string{"--max-sessions", "4", "--max-sessions-per-agent", "5"}, 0, 0, "more than --max-sessions"},
		{[]string{"--session-idle", "0"}, 0, 0, "seconds"},
		{[]string{"--body-timeout", "0"}, 0, 0, "seconds"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			c, _, err := Parse(append([]string{"--db", "x.db", "--http", "127.0.0.1:1", "--auth-tokens", "t"}, tt.args...), env, io.Discard)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.BodyTimeout != 60*time.Second {
				t.Fatalf("--body-timeout defaults to %s", c.BodyTimeout)
			}
			if c.MaxSessionsPerAgent != tt.perAgent || c.SessionIdle != tt.idle {
				t.Fatalf("per agent %d, idle %s; want %d, %s", c.MaxSessionsPerAgent, c.SessionIdle, tt.perAgent, tt.idle)
			}
		})
	}
}
