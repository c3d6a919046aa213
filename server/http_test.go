package server

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHostOnly(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:8765": "127.0.0.1", "LOCALHOST": "localhost", "[::1]:80": "::1", "Mem.Example.com:443": "mem.example.com", "": "",
	} {
		if got := hostOnly(in); got != want {
			t.Errorf("hostOnly(%q) = %q, want %q", in, got, want)
		}
	}
}

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
			c, _, err := ParseConfig(append([]string{"--db", "x.db"}, tt.args...), env, io.Discard)
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
		})
	}
}

// A session belongs to the agent that opened it; the sweeper (no agent)
// may end any.
func TestSessionTable(t *testing.T) {
	tab := &sessionTable{max: 2}
	req := func(agent string) *http.Request {
		return httptest.NewRequest("POST", "/mcp", nil).WithContext(WithAgent(context.Background(), agent))
	}
	alice, bob := tab.ResolveSessionIdManager(req("alice")), tab.ResolveSessionIdManager(req("bob"))
	id := alice.Generate()
	if _, err := alice.Validate(id); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.Validate(id); err == nil {
		t.Fatal("bob may use alice's session")
	}
	if _, err := alice.Validate(""); err == nil {
		t.Fatal("an empty session id is valid")
	}
	if notAllowed, _ := bob.Terminate(id); !notAllowed {
		t.Fatal("bob may end alice's session")
	}
	bob.Generate()
	if !tab.full() {
		t.Fatal("two sessions of max 2: not full")
	}
	if notAllowed, _ := tab.ResolveSessionIdManager(nil).Terminate(id); notAllowed {
		t.Fatal("the sweeper may not end a session")
	}
	if _, err := alice.Validate(id); err == nil || tab.full() {
		t.Fatal("an ended session is still valid")
	}
}
