package cli

import (
	"context"
	"crypto/tls"
	"fmt"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/tokens"
)

// serveHTTP is --http: the token file and the address are checked before
// the database is opened, so a bad start leaves nothing behind.
func serveHTTP(ctx context.Context, cfg *server.Config, log hclog.Logger) error {
	set, err := tokens.Open(cfg.AuthTokens)
	if err != nil {
		return &server.UsageError{Msg: "--auth-tokens: " + err.Error()}
	}
	if cfg.TLSCert != "" {
		if _, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey); err != nil {
			return &server.UsageError{Msg: fmt.Sprintf("--tls-cert %s / --tls-key %s: %v\nTry: PEM files of a certificate and its private key", cfg.TLSCert, cfg.TLSKey, err)}
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
	return s.ServeHTTP(ctx, l, server.HTTPOptions{Tokens: set})
}
