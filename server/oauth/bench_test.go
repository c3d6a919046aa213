package oauth

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server/tokens"
)

// BenchmarkCheck: what one request's token check costs, against the
// yardstick of a static token's lookup (a stat of the token file and the
// constant-time comparisons): a token's first check (its signature) and
// the later ones (remembered).
//
//	go test -run '^$' -bench Check -benchtime 2000x ./server/oauth
func BenchmarkCheck(b *testing.B) {
	t := &testing.T{}
	is := newIssuer(t)
	defer is.srv.Close()
	is.active["opaque"] = map[string]any{"active": true, "client_id": "ci", "scope": "memory:read", "aud": resource, "exp": time.Now().Add(time.Hour).Unix()}
	r := is.resource(t, nil)
	rsa := is.sign(t, jose.RS256, is.rsaKey, "rsa1", is.claims(nil))
	ec := is.sign(t, jose.ES256, is.ecKey, "ec1", is.claims(nil))
	file := filepath.Join(b.TempDir(), "tokens")
	static, err := tokens.Add(file, "alice", time.Now())
	if err != nil {
		b.Fatal(err)
	}
	set, err := tokens.Open(file)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("static-token-yardstick", func(b *testing.B) {
		for b.Loop() {
			if _, ok, _ := set.Lookup(static); !ok {
				b.Fatal("refused")
			}
		}
	})
	// Each token's first check: the signature verified.
	for name, tok := range map[string]string{"jwt-RS256-first": rsa, "jwt-ES256-first": ec} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				r.mu.Lock()
				clear(r.seen)
				r.mu.Unlock()
				if got := r.Check(context.Background(), tok); got.Agent == "" {
					b.Fatal(got.Why)
				}
			}
		})
	}
	// Every later request with the same token: remembered.
	for name, tok := range map[string]string{"jwt-RS256": rsa, "jwt-ES256": ec, "opaque-cached": "opaque"} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if got := r.Check(context.Background(), tok); got.Agent == "" {
					b.Fatal(got.Why)
				}
			}
		})
	}
}
