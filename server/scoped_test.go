package server

import (
	"context"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/config"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server/scopes"
)

// Every tool of both profiles has the scope its hints call for: a read
// needs memory:read, destructive_query memory:destructive, any other
// write memory:write. A tool added without its line in package scopes
// fails here (it would need memory:destructive).
func TestEveryToolHasItsScope(t *testing.T) {
	for _, profile := range []string{config.ProfileMemory, config.ProfileReadonly} {
		for name, doc := range toolDocs(t, testServer(t, "--profile", profile)) {
			a, _ := doc["annotations"].(map[string]any)
			want := scopes.Write
			switch {
			case a["readOnlyHint"] == true:
				want = scopes.Read
			case name == "destructive_query":
				want = scopes.Destructive
			}
			if got := scopes.For(name); got != want {
				t.Errorf("%s (%s): scope %s, want %s", name, profile, got, want)
			}
		}
	}
}

func TestFilterToolsByScope(t *testing.T) {
	all := []mcp.Tool{{Name: "read_query"}, {Name: "write_query"}, {Name: "destructive_query"}, {Name: "append_event"}}
	tests := []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"stdio: no scopes, everything", context.Background(), "read_query,write_query,destructive_query,append_event"},
		{"read", WithScopes(context.Background(), []string{scopes.Read}), "read_query"},
		{"write", WithScopes(context.Background(), []string{scopes.Write}), "write_query,append_event"},
		{"read and destructive", WithScopes(context.Background(), []string{scopes.Read, scopes.Destructive}), "read_query,destructive_query"},
		{"none", WithScopes(context.Background(), nil), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := &mcp.ListToolsResult{Tools: append([]mcp.Tool(nil), all...)}
			filterToolsByScope(tt.ctx, nil, nil, res)
			var names []string
			for _, tl := range res.Tools {
				names = append(names, tl.Name)
			}
			if got := strings.Join(names, ","); got != tt.want {
				t.Fatalf("tools %q, want %q", got, tt.want)
			}
		})
	}
	if got := forbidden("write_query", scopes.Write).Error(); !strings.HasPrefix(got, "FORBIDDEN: write_query needs scope memory:write; ask for a token with it") {
		t.Fatalf("forbidden: %s", got)
	}
}
