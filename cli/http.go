package cli

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/config"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server/oauth"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server/scopes"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server/tokens"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ui"
)

// serveHTTP is --http: the token file and the address are checked before
// the database is opened, so a bad start leaves nothing behind.
func serveHTTP(ctx context.Context, cfg *config.Config, log hclog.Logger, trace string) error {
	var set *tokens.Set
	if cfg.AuthTokens != "" {
		var err error
		if set, err = tokens.Open(cfg.AuthTokens); err != nil {
			return &config.UsageError{Msg: "--auth-tokens: " + err.Error()}
		}
	}
	res, err := oauthResource(cfg, log)
	if err != nil {
		return err
	}
	if cfg.TLSCert != "" {
		if _, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey); err != nil {
			return &config.UsageError{Msg: fmt.Sprintf("--tls-cert %s / --tls-key %s: %v\nTry: PEM files of a certificate and its private key", cfg.TLSCert, cfg.TLSKey, err)}
		}
	}
	l, err := server.ListenHTTP(cfg)
	if err != nil {
		return err
	}
	defer l.Close()
	s, err := server.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	done, err := traceCalls(s, trace)
	if err != nil {
		return err
	}
	defer done()
	opt := server.HTTPOptions{Tokens: set, OAuth: res}
	if cfg.Clustered() && cfg.RQLiteData == "" {
		// The view reads one file: a front without a node beside it has
		// none (docs/cluster.md).
		log.Info("the person's view (/ui/) is not served by a cluster front without --rqlite-data")
	} else if cfg.Profile == config.ProfileMemory {
		// The person's view (SPEC 12) at /ui/, for a holder of a token.
		// In cluster mode it shows the copy of the node beside this front.
		db := cfg.DB
		if cfg.Clustered() {
			db = cfg.NodeFile()
		}
		view, err := ui.New(ctx, ui.Options{
			DB: db, SnapshotDir: cfg.SnapshotDir, Stem: config.Stem(db), Base: "/ui",
			HostChecked: true, Authorized: tokenHolder(set, res), Log: log.Named("ui"),
			Challenge: `Basic realm="mcp-sqlite-memory", charset="UTF-8"`,
			Refusal:   "refused: sign in with an agent's name and its token as the password (make one: mcp-sqlite-memory token add NAME --auth-tokens FILE)",
		})
		if err != nil {
			s.Close()
			return err
		}
		defer view.Close()
		opt.Public = map[string]http.Handler{"/ui/": http.StripPrefix("/ui", view.Handler())}
	}
	return s.ServeHTTP(ctx, l, opt)
}

// tokenHolder admits a request that carries a valid token with the scope
// memory:read (SPEC 11.2): as a bearer token (a script; an OAuth access
// token too), or as the password of HTTP Basic, which is what a browser
// can send once the person typed it (the user name, when given, must be
// the token's own).
func tokenHolder(set *tokens.Set, res *oauth.Resource) func(*http.Request) bool {
	return func(r *http.Request) bool {
		user, token, basic := r.BasicAuth()
		if !basic {
			scheme, value, ok := strings.Cut(r.Header.Get("Authorization"), " ")
			if !ok || !strings.EqualFold(scheme, "Bearer") {
				return false
			}
			token = strings.TrimSpace(value)
		}
		if set != nil {
			e, ok, err := set.Find(token)
			if err == nil && ok {
				return (user == "" || user == e.Name) && scopes.Has(e.Scopes, scopes.Read)
			}
		}
		if res != nil && !basic && !strings.HasPrefix(token, tokens.Prefix) {
			got := res.Check(r.Context(), token)
			return got.Agent != "" && scopes.Has(got.Scopes, scopes.Read)
		}
		return false
	}
}

// oauthResource is --oauth-issuer's resource server, or nil without it.
func oauthResource(cfg *config.Config, log hclog.Logger) (*oauth.Resource, error) {
	if cfg.OAuthIssuer == "" {
		return nil, nil
	}
	c := oauth.Config{Issuer: cfg.OAuthIssuer, Resource: cfg.Resource, AgentClaim: cfg.OAuthAgentClaim,
		CacheMax: cfg.OAuthCache, Log: log.Named("oauth")}
	if cfg.OAuthIntrospectSecret != "" {
		// A secret as private as the token file: 0600, a regular file.
		if err := tokens.PermProblem(cfg.OAuthIntrospectSecret); err != nil {
			return nil, &config.UsageError{Msg: "--oauth-introspection-secret: " + err.Error()}
		}
		data, err := os.ReadFile(cfg.OAuthIntrospectSecret)
		if err != nil {
			return nil, &config.UsageError{Msg: "--oauth-introspection-secret: " + err.Error()}
		}
		id, secret, ok := strings.Cut(strings.TrimSpace(string(data)), ":")
		if !ok || id == "" || secret == "" {
			return nil, &config.UsageError{Msg: "--oauth-introspection-secret " + cfg.OAuthIntrospectSecret + " must hold one line CLIENT_ID:CLIENT_SECRET (this server's client credentials at the issuer)"}
		}
		c.ClientID, c.ClientSecret = id, secret
	}
	res, err := oauth.New(c)
	if err != nil {
		return nil, &config.UsageError{Msg: err.Error()}
	}
	return res, nil
}
