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
		{[]string{"--http", "127.0.0.1:8765"}, "--http needs --auth-tokens", ""},
		{[]string{"--http", "8765", "--auth-tokens", "t"}, "must be host:port", ""},
		{[]string{"--http", "0.0.0.0:8765", "--auth-tokens", "t"}, "--allowed-hosts", ""},
		{[]string{"--http", ":8765", "--auth-tokens", "t"}, "--allowed-hosts", ""},
		{[]string{"--http", "127.0.0.1:1", "--auth-tokens", "t", "--tls-cert", "c"}, "go together", ""},
		{[]string{"--http", "127.0.0.1:1", "--auth-tokens", "t", "--allowed-origins", "ide.example.com"}, "not an origin", ""},
		{[]string{"--http", "127.0.0.1:1", "--auth-tokens", "t"}, "", "127.0.0.1,localhost,::1"},
		{[]string{"--http", "0.0.0.0:1", "--auth-tokens", "t", "--allowed-hosts", "a.example, b.example"}, "", "a.example,b.example"},
		{[]string{"--http", "mem.lan:1", "--auth-tokens", "t"}, "", "mem.lan"},
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
