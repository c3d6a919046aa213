package server

import (
	"context"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server/scopes"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server/tokens"
)

// TestRevocations: a request's context ends with errRevoked when its
// token is revoked or replaced, the agent's sessions end, a request made
// with the old token is cancelled from the start, another agent's goes
// on, and a new token of the same name binds afresh.
func TestRevocations(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens")
	alice, _ := tokens.Add(file, "alice", time.Now())
	bob, _ := tokens.Add(file, "bob", time.Now())
	set, err := tokens.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{log: hclog.NewNullLogger(), mcp: mcpserver.NewMCPServer("t", "1")}
	table := &sessionTable{max: 10}
	v := s.watchRevocations(set, table)
	defer v.stopWatch()
	request := func(token string) context.Context {
		r := httptest.NewRequest("POST", "/mcp", nil)
		r.Header.Set("Authorization", "Bearer "+token)
		ctx, end := v.bind(r, map[string]string{alice: "alice", bob: "bob"}[token])
		t.Cleanup(end)
		return ctx
	}
	bobSession := agentSessions{t: table, agent: "bob"}.Generate()
	aliceSession := agentSessions{t: table, agent: "alice"}.Generate()
	a, b := request(alice), request(bob)
	if a.Err() != nil || b.Err() != nil {
		t.Fatal("a request ended before any revocation")
	}
	if _, err := tokens.Revoke(file, "bob"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("bob's request goes on 10 s after his token was revoked")
	}
	if !errors.Is(context.Cause(b), errRevoked) {
		t.Fatalf("cause %v, want errRevoked", context.Cause(b))
	}
	if a.Err() != nil {
		t.Fatal("alice's request ended with bob's revocation")
	}
	if _, err := (agentSessions{t: table, agent: "bob"}).Validate(bobSession); err == nil {
		t.Fatal("bob's session outlived his token")
	}
	if _, err := (agentSessions{t: table, agent: "alice"}).Validate(aliceSession); err != nil {
		t.Fatal("alice's session ended with bob's revocation")
	}
	if late := request(bob); !errors.Is(context.Cause(late), errRevoked) {
		t.Fatal("a request with the revoked token was not cancelled from the start")
	}
	// A new token of the same name is known at its first request (no
	// wait for the watcher), and bob's old one stays revoked.
	bob2, err := tokens.Add(file, "bob", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("POST", "/mcp", nil)
	r.Header.Set("Authorization", "Bearer "+bob2)
	fresh, end := v.bind(r, "bob")
	defer end()
	if fresh.Err() != nil {
		t.Fatalf("bob's new token: %v", context.Cause(fresh))
	}
	if late := request(bob); late.Err() == nil {
		t.Fatal("bob's old token binds again")
	}
	// Replacing alice's token (revoke, add) revokes her old requests.
	if _, err := tokens.Revoke(file, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := tokens.Add(file, "alice", time.Now()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("alice's request goes on 10 s after her token was replaced")
	}
	if fresh.Err() != nil {
		t.Fatal("bob's new request ended with alice's revocation")
	}
}

// TestRevocationsOfScopes: a token file change that takes a scope from a
// token ends its agent's requests in flight (SPEC 11.1: "restricts");
// one that widens its scopes ends nothing, and the narrowed token binds
// again at its next request.
func TestRevocationsOfScopes(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens")
	carol, err := tokens.Add(file, "carol", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	set, err := tokens.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{log: hclog.NewNullLogger(), mcp: mcpserver.NewMCPServer("t", "1")}
	v := s.watchRevocations(set, &sessionTable{max: 10})
	defer v.stopWatch()
	request := func() context.Context {
		r := httptest.NewRequest("POST", "/mcp", nil)
		r.Header.Set("Authorization", "Bearer "+carol)
		ctx, end := v.bind(r, "carol")
		t.Cleanup(end)
		return ctx
	}
	setScopes := func(list ...string) {
		t.Helper()
		if ok, err := tokens.SetScopes(file, "carol", list); err != nil || !ok {
			t.Fatalf("SetScopes %v: %v %v", list, ok, err)
		}
	}
	setScopes(scopes.Read)
	// Seen before the request binds: else the watcher's next look
	// compares the widening below with the token's first, wider scopes
	// and calls it a narrowing (a race the race detector's slowness made).
	v.look()
	narrowed := request()
	setScopes(scopes.Read, scopes.Write)
	v.look() // the widening seen at once, not after the watcher's tick
	if narrowed.Err() != nil {
		t.Fatalf("a widening ended carol's request: %v", context.Cause(narrowed))
	}
	setScopes(scopes.Write)
	select {
	case <-narrowed.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("carol's request goes on 10 s after her token lost memory:read")
	}
	if !errors.Is(context.Cause(narrowed), errRevoked) {
		t.Fatalf("cause %v, want errRevoked", context.Cause(narrowed))
	}
	if again := request(); again.Err() != nil {
		t.Fatalf("the narrowed token does not bind again: %v", context.Cause(again))
	}
}
