package cli

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/config"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server/tokens"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ui"
)

// serveHTTP is --http: the token file and the address are checked before
// the database is opened, so a bad start leaves nothing behind.
func serveHTTP(ctx context.Context, cfg *config.Config, log hclog.Logger, trace string) error {
	set, err := tokens.Open(cfg.AuthTokens)
	if err != nil {
		return &config.UsageError{Msg: "--auth-tokens: " + err.Error()}
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
	opt := server.HTTPOptions{Tokens: set}
	if cfg.Profile == config.ProfileMemory {
		// The person's view (SPEC 12) at /ui/, for a holder of a token.
		view, err := ui.New(ctx, ui.Options{
			DB: cfg.DB, SnapshotDir: cfg.SnapshotDir, Stem: config.Stem(cfg.DB), Base: "/ui",
			HostChecked: true, Authorized: tokenHolder(set), Log: log.Named("ui"),
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

// tokenHolder admits a request that carries a valid token: as a bearer
// token (a script), or as the password of HTTP Basic, which is what a
// browser can send once the person typed it (the user name, when given,
// must be the token's own).
func tokenHolder(set *tokens.Set) func(*http.Request) bool {
	return func(r *http.Request) bool {
		user, token, basic := r.BasicAuth()
		if !basic {
			scheme, value, ok := strings.Cut(r.Header.Get("Authorization"), " ")
			if !ok || !strings.EqualFold(scheme, "Bearer") {
				return false
			}
			token = strings.TrimSpace(value)
		}
		name, ok, err := set.Lookup(token)
		return err == nil && ok && (user == "" || user == name)
	}
}
