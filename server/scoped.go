package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server/httpguard"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server/oauth"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server/scopes"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server/tokens"
)

// Scopes over HTTP (SPEC 11.2): the guard puts the agent's scopes in the
// request's context; tools/list shows only the tools they allow, and a
// call of another tool is refused with FORBIDDEN and audited. Over stdio
// and for in-process calls there are no scopes: everything is allowed.

type scopesKey struct{}

// granted is an agent's scopes; a context without one is unrestricted.
type granted struct{ scopes []string }

// WithScopes marks ctx as a call allowed only the tools scopes allow.
func WithScopes(ctx context.Context, s []string) context.Context {
	return context.WithValue(ctx, scopesKey{}, granted{s})
}

// missingScope is the scope ctx lacks for tool, or "" if it may call it.
func missingScope(ctx context.Context, tool string) string {
	g, ok := ctx.Value(scopesKey{}).(granted)
	if !ok || scopes.Allows(g.scopes, tool) {
		return ""
	}
	return scopes.For(tool)
}

// forbidden is the error an agent reads for a tool its token may not use.
func forbidden(tool, scope string) error {
	return errcode.New(errcode.Forbidden, fmt.Sprintf("%s needs scope %s; ask for a token with it (OAuth: request the scope %s; a static token: mcp-sqlite-memory token scopes NAME LIST)", tool, scope, scope))
}

// auditForbidden writes the audit row of a call refused for scope.
func (s *Server) auditForbidden(ctx context.Context, tool, scope string) error {
	c := &call{agent: AgentFrom(ctx), detail: map[string]any{"missing_scope": scope}}
	if c.agent != "" {
		c.detail["agent"] = c.agent
	}
	err := forbidden(tool, scope)
	s.audit(tool, time.Now(), c, err)
	return err
}

// filterToolsByScope is the tools/list hook: an agent sees only the
// tools its scopes allow. (mcp-go's WithToolFilter would also turn a
// call of another tool into "tool not found" before the handler can say
// FORBIDDEN and audit it.)
func filterToolsByScope(ctx context.Context, _ any, _ *mcp.ListToolsRequest, result *mcp.ListToolsResult) {
	if result == nil {
		return
	}
	kept := result.Tools[:0:0]
	for _, t := range result.Tools {
		if missingScope(ctx, t.Name) == "" {
			kept = append(kept, t)
		}
	}
	result.Tools = kept
}

// scopeHooks are the mcp-go hooks that apply scopes.
func scopeHooks() *mcpserver.Hooks {
	h := &mcpserver.Hooks{}
	h.AddAfterListTools(filterToolsByScope)
	return h
}

// withScopes puts the authenticated agent's scopes where the tool
// handlers look (WithScopes, missingScope).
func withScopes(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := httpguard.IdentityFrom(r.Context()); id.Agent != "" {
			r = r.WithContext(WithScopes(r.Context(), id.Scopes))
		}
		next.ServeHTTP(w, r)
	})
}

// stepUp answers, before mcp-go, an OAuth agent's tools/call of a tool
// its token's scopes do not allow: HTTP 403 with the challenge (the MCP
// spec's step-up authorization), a JSON-RPC error that says FORBIDDEN,
// and the audit row. A static token's agent cannot step up: its call
// reaches the handler, which refuses it as a tool error (FORBIDDEN,
// audited). res nil (no OAuth): nothing to do.
func (s *Server) stepUp(res *oauth.Resource) httpguard.Middleware {
	return func(next http.Handler) http.Handler {
		if res == nil {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, ok := httpguard.BodyBytes(r)
			if !ok || !strings.HasPrefix(AgentFrom(r.Context()), oauth.AgentPrefix) || !s.refuseScope(r.Context(), res, w, body) {
				next.ServeHTTP(w, r)
			}
		})
	}
}

// refuseScope answers an OAuth agent's tools/call of a tool outside its
// scopes and reports true; anything else it leaves alone.
func (s *Server) refuseScope(ctx context.Context, res *oauth.Resource, w http.ResponseWriter, body []byte) bool {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &m) != nil || m.Method != "tools/call" {
		// A batch or anything else goes on; the handler refuses a
		// forbidden call in it (FORBIDDEN, audited).
		return false
	}
	tool, id := m.Params.Name, m.ID
	scope := missingScope(ctx, tool)
	if scope == "" {
		return false
	}
	err := s.auditForbidden(ctx, tool, scope)
	w.Header().Set("WWW-Authenticate", res.InsufficientScope(scope))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusForbidden)
	if len(id) == 0 {
		id = []byte("null")
	}
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32003,"message":%q}}`, id, err.Error())
	s.log.Debug("http request refused", "status", http.StatusForbidden, "agent", AgentFrom(ctx), "tool", tool, "missing-scope", scope)
	return true
}

// oauthAuth is the bearer check with --oauth-issuer: a static token of
// --auth-tokens first, else an access token checked with the issuer's
// keys or introspection. Every refusal carries RFC 9728's challenge
// (401, or 503 while the issuer has not been reached). A token shaped
// like a static one is never sent to the issuer.
type oauthAuth struct {
	static *tokenAuth
	res    *oauth.Resource
}

func (a oauthAuth) Authenticate(r *http.Request) (httpguard.Identity, *httpguard.Refusal) {
	if a.static.tokens != nil {
		if id, no := a.static.Authenticate(r); no == nil {
			return id, nil
		}
	}
	tok, _ := httpguard.BearerToken(r)
	res := a.res.Authenticate(r)
	if strings.HasPrefix(tok, tokens.Prefix) {
		res = oauth.Result{Status: http.StatusUnauthorized, Challenge: a.res.Challenge("invalid_token"), Why: "not a valid static token"}
	}
	if res.Agent != "" {
		return httpguard.Identity{Agent: res.Agent, Scopes: res.Scopes}, nil
	}
	no := &httpguard.Refusal{Status: res.Status, Challenge: res.Challenge,
		Message: "a valid token is required: send Authorization: Bearer TOKEN with an access token of " + a.res.Issuer() + " for " + a.res.ResourceURL() + " (its metadata: " + a.res.MetadataURL() + ")"}
	if res.Status == http.StatusServiceUnavailable {
		no.Header = [][2]string{{"Retry-After", "10"}}
		no.Message = "the authorization server has not been reached yet; try again shortly"
	}
	a.static.s.log.Debug("OAuth token refused", "why", res.Why)
	return httpguard.Identity{}, no
}

// looksLikeJWT tells a query value shaped like a signed JWT (a base64url
// JSON header starting `{"`, and two more parts): an access token in the
// URL.
func looksLikeJWT(v string) bool {
	return strings.HasPrefix(v, "eyJ") && strings.Count(v, ".") == 2
}
