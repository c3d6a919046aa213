package server

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/config"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server/tokens"
)

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
	if tab.count() != 2 {
		t.Fatal("two sessions of max 2: not full")
	}
	if notAllowed, _ := tab.ResolveSessionIdManager(nil).Terminate(id); notAllowed {
		t.Fatal("the sweeper may not end a session")
	}
	if _, err := alice.Validate(id); err == nil || tab.count() != 1 {
		t.Fatal("an ended session is still valid")
	}
}

// The front door alone, in front of a mounted handler (the Mount hook): what
// passes reaches it with the agent's name; everything else is refused
// before it.
func TestGuardMount(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens")
	tok, err := tokens.Add(file, "alice", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	set, err := tokens.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/ui/", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "page for "+AgentFrom(r.Context()))
	})
	public := http.NewServeMux()
	public.HandleFunc("/ui/login", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "login page") })
	cfg := &config.Config{}
	cfg.AllowedHosts, cfg.AllowedOrigins, cfg.MaxBodyMB, cfg.BodyTimeout = []string{"127.0.0.1"}, []string{"https://ok.example"}, 1, time.Second
	s := &Server{cfg: cfg, log: hclog.NewNullLogger()}
	sessions := &sessionTable{max: 1}
	mcpHandler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "mcp for "+AgentFrom(r.Context()))
	})
	g := s.frontDoor(HTTPOptions{Tokens: set, Mount: map[string]http.Handler{"/ui/": mux}, Public: map[string]http.Handler{"/ui/login": public}}, sessions, nil, mcpHandler)
	tests := []struct {
		name, method, url, auth, origin, body string
		status                                int
		want                                  string
	}{
		{"page", "GET", "http://127.0.0.1/ui/x?kind=note", "Bearer " + tok, "", "", 200, "page for alice"},
		{"page from an allowed origin", "GET", "http://127.0.0.1/ui/", "Bearer " + tok, "https://ok.example", "", 200, "page for alice"},
		{"bearer is case-insensitive", "GET", "http://127.0.0.1/ui/", "bearer " + tok, "", "", 200, "page for alice"},
		{"no token", "GET", "http://127.0.0.1/ui/", "", "", "", 401, "valid token"},
		{"bad host", "GET", "http://evil.example/ui/", "Bearer " + tok, "", "", 403, "Host"},
		{"bad origin", "GET", "http://127.0.0.1/ui/", "Bearer " + tok, "https://evil.example", "", 403, "Origin"},
		{"token in the query", "GET", "http://127.0.0.1/ui/?t=" + tok, "Bearer " + tok, "", "", 400, "in the URL"},
		{"credential parameter", "GET", "http://127.0.0.1/ui/?api_key=x", "Bearer " + tok, "", "", 400, "in the URL"},
		{"big body", "POST", "http://127.0.0.1/ui/", "Bearer " + tok, "", strings.Repeat("x", 2<<20), 413, "--max-body-mb"},
		{"mcp", "POST", "http://127.0.0.1/mcp", "Bearer " + tok, "", "{}", 200, "mcp for alice"},
		{"unknown path", "GET", "http://127.0.0.1/other", "Bearer " + tok, "", "", 404, ""},
		{"healthz", "GET", "http://evil.example/healthz", "", "", "", 200, "ok"},
		{"public page without a token", "GET", "http://127.0.0.1/ui/login", "", "", "", 200, "login page"},
		{"public page, bad host", "GET", "http://evil.example/ui/login", "", "", "", 403, "Host"},
		{"public page, bad origin", "POST", "http://127.0.0.1/ui/login", "", "https://evil.example", "", 403, "Origin"},
		{"public page, token in the URL", "GET", "http://127.0.0.1/ui/login?token=x", "", "", "", 400, "in the URL"},
		{"healthz post", "POST", "http://127.0.0.1/healthz", "", "", "", 405, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, tt.url, strings.NewReader(tt.body))
			if tt.auth != "" {
				r.Header.Set("Authorization", tt.auth)
			}
			if tt.origin != "" {
				r.Header.Set("Origin", tt.origin)
			}
			w := httptest.NewRecorder()
			g.ServeHTTP(w, r)
			if w.Code != tt.status || !strings.Contains(w.Body.String(), tt.want) {
				t.Fatalf("%d %q, want %d with %q", w.Code, w.Body.String(), tt.status, tt.want)
			}
		})
	}
	// A second session beyond --max-sessions 1 is refused.
	sessions.ResolveSessionIdManager(nil).Generate()
	r := httptest.NewRequest("POST", "http://127.0.0.1/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize"}`))
	r.Header.Set("Authorization", "Bearer "+tok)
	w := httptest.NewRecorder()
	g.ServeHTTP(w, r)
	if w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "--max-sessions") {
		t.Fatalf("session over the limit: %d %q", w.Code, w.Body.String())
	}
}
