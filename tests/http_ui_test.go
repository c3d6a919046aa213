package tests

import (
	"encoding/base64"
	"os/exec"
	"strings"
	"testing"
)

// TestHTTPUI: under --http the person's view is at /ui/ for a holder of
// a token, sent as HTTP Basic's password (what a browser asks the person
// for) or as a bearer token; anyone else gets a Basic challenge, a
// revoked token stops working without a restart, and the guard's Host
// check holds for the pages too.
func TestHTTPUI(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	h := startHTTP(t, db, []string{"alice", "bob"})
	s := h.connect(t, "alice", true)
	s.ok("append_event", map[string]any{"content": "<script>document.title='owned'</script> seen by the person"})
	basic := func(user, pass string) map[string]string {
		return map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))}
	}
	tests := []struct {
		name      string
		path      string
		header    map[string]string
		status    int
		body      string
		challenge bool
	}{
		{"no credentials", "/ui/", nil, 401, "sign in with an agent's name and its token", true},
		{"basic with the token", "/ui/", basic("alice", h.token["alice"]), 200, "seen by the person", false},
		{"basic without a user name", "/ui/chain", basic("", h.token["bob"]), 200, "", false},
		{"bearer", "/ui/activity", map[string]string{"Authorization": "Bearer " + h.token["bob"]}, 200, "append_event", false},
		{"basic with a wrong token", "/ui/", basic("alice", "msm_wrong"), 401, "", true},
		{"basic with another agent's name", "/ui/", basic("bob", h.token["alice"]), 401, "", true},
		{"bad Host", "/ui/", map[string]string{"Host": "evil.example.com", "Authorization": "Bearer " + h.token["bob"]}, 403, "is not one of this server's names", false},
		{"POST", "/ui/", map[string]string{"Authorization": "Bearer " + h.token["bob"]}, 405, "read-only", false},
	}
	for _, tt := range tests {
		method := "GET"
		if tt.name == "POST" {
			method = "POST"
		}
		status, header, body := h.rawRequest(t, method, tt.path, tt.header, "")
		if status != tt.status || !strings.Contains(body, tt.body) {
			t.Errorf("%s: %d %q, want %d with %q", tt.name, status, bounded(body), tt.status, tt.body)
		}
		if got := strings.HasPrefix(header.Get("WWW-Authenticate"), "Basic "); got != tt.challenge {
			t.Errorf("%s: WWW-Authenticate %q", tt.name, header.Get("WWW-Authenticate"))
		}
		if status == 200 && strings.Contains(body, "<script>document.title") {
			t.Errorf("%s: the agent's script reached the page unescaped", tt.name)
		}
	}
	if out, err := exec.Command(serverBin, "token", "revoke", "alice", "--auth-tokens", h.tokens).CombinedOutput(); err != nil {
		t.Fatalf("token revoke: %v %s", err, out)
	}
	if status, _, _ := h.rawRequest(t, "GET", "/ui/", basic("alice", h.token["alice"]), ""); status != 401 {
		t.Fatalf("a revoked token still opens the view: %d", status)
	}
}
