package oauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server/scopes"
)

const resource = "https://memory.example.com/mcp"

// issuer is a fake authorization server: metadata at OpenID discovery's
// place, a JWKS, an introspection endpoint.
type issuer struct {
	srv        *httptest.Server
	rsaKey     *rsa.PrivateKey
	ecKey      *ecdsa.PrivateKey
	jwksFetch  atomic.Int32
	introCalls atomic.Int32
	jwks       func(w http.ResponseWriter) // nil: the two public keys
	active     map[string]map[string]any   // opaque token -> introspection answer
}

func newIssuer(t *testing.T) *issuer {
	t.Helper()
	is := &issuer{active: map[string]map[string]any{}}
	is.rsaKey, _ = rsa.GenerateKey(rand.Reader, 2048)
	is.ecKey, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": is.srv.URL, "jwks_uri": is.srv.URL + "/jwks", "introspection_endpoint": is.srv.URL + "/introspect"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		is.jwksFetch.Add(1)
		if is.jwks != nil {
			is.jwks(w)
			return
		}
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
			{Key: &is.rsaKey.PublicKey, KeyID: "rsa1", Algorithm: "RS256", Use: "sig"},
			{Key: &is.ecKey.PublicKey, KeyID: "ec1", Algorithm: "ES256", Use: "sig"},
		}})
	})
	mux.HandleFunc("/introspect", func(w http.ResponseWriter, r *http.Request) {
		is.introCalls.Add(1)
		if id, secret, ok := r.BasicAuth(); !ok || id != "memory" || secret != "s3cret" {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		ans, ok := is.active[r.PostFormValue("token")]
		if !ok {
			ans = map[string]any{"active": false}
		}
		_ = json.NewEncoder(w).Encode(ans)
	})
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	return is
}

func (is *issuer) resource(t *testing.T, mod func(*Config)) *Resource {
	t.Helper()
	cfg := Config{Issuer: is.srv.URL, Resource: resource, ClientID: "memory", ClientSecret: "s3cret"}
	if mod != nil {
		mod(&cfg)
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := r.discover(ctx); err != nil {
		t.Fatal(err)
	}
	return r
}

// sign makes a JWT with the issuer's RSA key unless alg says otherwise.
func (is *issuer) sign(t *testing.T, alg jose.SignatureAlgorithm, key any, kid string, claims map[string]any) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithType("at+jwt")
	if kid != "" {
		opts = opts.WithHeader("kid", kid)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func (is *issuer) claims(mod map[string]any) map[string]any {
	c := map[string]any{"iss": is.srv.URL, "aud": resource, "exp": time.Now().Add(time.Hour).Unix(),
		"iat": time.Now().Unix(), "client_id": "reviewer", "sub": "alice", "scope": "openid memory:read other:write"}
	for k, v := range mod {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

func TestJWT(t *testing.T) {
	is := newIssuer(t)
	r := is.resource(t, nil)
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	pubDER, _ := x509.MarshalPKIXPublicKey(&is.rsaKey.PublicKey)
	b64 := base64.RawURLEncoding.EncodeToString
	good := is.sign(t, jose.RS256, is.rsaKey, "rsa1", is.claims(nil))
	parts := strings.Split(good, ".")
	tests := []struct {
		name, token string
		agent       string
		scopes      []string
		why         string
	}{
		{name: "rsa", token: good, agent: "oauth:reviewer", scopes: []string{scopes.Read}},
		{name: "ec, audience list, scp", token: is.sign(t, jose.ES256, is.ecKey, "ec1", is.claims(map[string]any{"aud": []string{"x", resource}, "scope": nil, "scp": []string{"memory:write", "memory:destructive"}})),
			agent: "oauth:reviewer", scopes: []string{scopes.Write, scopes.Destructive}},
		{name: "sub when no client_id", token: is.sign(t, jose.RS256, is.rsaKey, "rsa1", is.claims(map[string]any{"client_id": nil})), agent: "oauth:alice", scopes: []string{scopes.Read}},
		{name: "within the skew", token: is.sign(t, jose.RS256, is.rsaKey, "rsa1", is.claims(map[string]any{"exp": time.Now().Add(-10 * time.Second).Unix()})), agent: "oauth:reviewer", scopes: []string{scopes.Read}},
		{name: "expired", token: is.sign(t, jose.RS256, is.rsaKey, "rsa1", is.claims(map[string]any{"exp": time.Now().Add(-time.Hour).Unix()})), why: "expired"},
		{name: "no exp", token: is.sign(t, jose.RS256, is.rsaKey, "rsa1", is.claims(map[string]any{"exp": nil})), why: "no exp"},
		{name: "not yet valid", token: is.sign(t, jose.RS256, is.rsaKey, "rsa1", is.claims(map[string]any{"nbf": time.Now().Add(time.Hour).Unix()})), why: "not valid yet"},
		{name: "another audience", token: is.sign(t, jose.RS256, is.rsaKey, "rsa1", is.claims(map[string]any{"aud": "https://other.example.com/mcp"})), why: "does not name this resource"},
		{name: "no audience", token: is.sign(t, jose.RS256, is.rsaKey, "rsa1", is.claims(map[string]any{"aud": nil})), why: "does not name this resource"},
		{name: "foreign issuer", token: is.sign(t, jose.RS256, is.rsaKey, "rsa1", is.claims(map[string]any{"iss": "https://evil.example.com"})), why: "issuer"},
		{name: "another key", token: is.sign(t, jose.RS256, other, "rsa1", is.claims(nil)), why: "signature does not verify"},
		{name: "tampered claims", token: parts[0] + "." + b64([]byte(`{"iss":"`+is.srv.URL+`","aud":"`+resource+`","exp":9999999999,"client_id":"admin","scope":"memory:destructive"}`)) + "." + parts[2], why: "signature does not verify"},
		{name: "alg none", token: b64([]byte(`{"alg":"none","kid":"rsa1"}`)) + "." + parts[1] + ".", why: "asymmetric"},
		{name: "HMAC with the public key", token: is.sign(t, jose.HS256, pubDER, "rsa1", is.claims(nil)), why: "asymmetric"},
		{name: "unknown kid", token: is.sign(t, jose.RS256, is.rsaKey, "rsa9", is.claims(nil)), why: `no key "rsa9"`},
		{name: "agent name with a space", token: is.sign(t, jose.RS256, is.rsaKey, "rsa1", is.claims(map[string]any{"client_id": "a b"})), why: "cannot name an agent"},
		{name: "no agent claim", token: is.sign(t, jose.RS256, is.rsaKey, "rsa1", is.claims(map[string]any{"client_id": nil, "sub": nil})), why: "no client_id or sub"},
		{name: "garbage", token: "a.b.c", why: "asymmetric"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := r.Check(context.Background(), tt.token)
			if tt.why != "" {
				if got.Agent != "" || got.Status != http.StatusUnauthorized || !strings.Contains(got.Why, tt.why) || !strings.Contains(got.Challenge, `error="invalid_token"`) {
					t.Fatalf("got %+v, want 401 for %q", got, tt.why)
				}
				return
			}
			if got.Agent != tt.agent || !slices.Equal(got.Scopes, tt.scopes) {
				t.Fatalf("got %+v, want %s %v", got, tt.agent, tt.scopes)
			}
		})
	}
	// The unknown kid fetched the JWKS again once; within the minute no
	// other token makes it fetch again.
	before := is.jwksFetch.Load()
	r.Check(context.Background(), is.sign(t, jose.RS256, is.rsaKey, "rsa8", is.claims(nil)))
	if is.jwksFetch.Load() != before {
		t.Fatalf("JWKS fetched %d times more within a minute", is.jwksFetch.Load()-before)
	}
}

func TestAgentClaim(t *testing.T) {
	is := newIssuer(t)
	r := is.resource(t, func(c *Config) { c.AgentClaim = "sub" })
	got := r.Check(context.Background(), is.sign(t, jose.RS256, is.rsaKey, "rsa1", is.claims(nil)))
	if got.Agent != "oauth:alice" {
		t.Fatalf("agent %q, want oauth:alice", got.Agent)
	}
}

// A JWKS that hangs or is huge costs a bounded time and memory, and the
// token is refused.
func TestJWKSBounds(t *testing.T) {
	for _, tc := range []struct {
		name string
		jwks func(w http.ResponseWriter)
		want string
	}{
		{"hangs", func(w http.ResponseWriter) { time.Sleep(2 * time.Second) }, "Timeout"},
		{"50 MB", func(w http.ResponseWriter) {
			_, _ = w.Write([]byte(`{"keys":[{"kty":"oct","k":"`))
			chunk := []byte(strings.Repeat("A", 1<<20))
			for range 50 {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}, "more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := newIssuer(t)
			is.jwks = tc.jwks
			r, err := New(Config{Issuer: is.srv.URL, Resource: resource, Client: &http.Client{Timeout: 500 * time.Millisecond}})
			if err != nil {
				t.Fatal(err)
			}
			err = r.discover(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("discover: %v, want %q", err, tc.want)
			}
			if got := r.Check(context.Background(), is.sign(t, jose.RS256, is.rsaKey, "rsa1", is.claims(nil))); got.Status != http.StatusServiceUnavailable {
				t.Fatalf("before discovery: %+v, want 503", got)
			}
		})
	}
}

func TestIntrospection(t *testing.T) {
	is := newIssuer(t)
	exp := time.Now().Add(time.Hour).Unix()
	is.active["opaque-good"] = map[string]any{"active": true, "client_id": "ci", "scope": "memory:read memory:write", "aud": resource, "iss": is.srv.URL, "exp": exp}
	is.active["opaque-other-aud"] = map[string]any{"active": true, "client_id": "ci", "scope": "memory:read", "aud": "https://other.example.com", "exp": exp}
	is.active["opaque-expired"] = map[string]any{"active": true, "client_id": "ci", "aud": resource, "exp": time.Now().Add(-time.Hour).Unix()}
	r := is.resource(t, nil)
	tests := []struct{ token, agent, why string }{
		{"opaque-good", "oauth:ci", ""},
		{"opaque-other-aud", "", "does not name this resource"},
		{"opaque-expired", "", "expired"},
		{"opaque-unknown", "", "not active"},
	}
	for _, tt := range tests {
		got := r.Check(context.Background(), tt.token)
		if got.Agent != tt.agent || !strings.Contains(got.Why, tt.why) {
			t.Errorf("%s: %+v, want %q %q", tt.token, got, tt.agent, tt.why)
		}
	}
	calls := is.introCalls.Load()
	if got := r.Check(context.Background(), "opaque-good"); !slices.Equal(got.Scopes, []string{scopes.Read, scopes.Write}) {
		t.Fatalf("cached: %+v", got)
	}
	if is.introCalls.Load() != calls {
		t.Fatal("a cached answer asked the issuer again")
	}
	// Past CacheMax the issuer is asked again (and says revoked).
	r.now = func() time.Time { return time.Now().Add(2 * time.Minute) }
	delete(is.active, "opaque-good")
	if got := r.Check(context.Background(), "opaque-good"); got.Agent != "" {
		t.Fatalf("after the cache's bound: %+v, want refused", got)
	}
	noSecret := is.resource(t, func(c *Config) { c.ClientID, c.ClientSecret = "", "" })
	if got := noSecret.Check(context.Background(), "opaque-good"); !strings.Contains(got.Why, "--oauth-introspection-secret") {
		t.Fatalf("without credentials: %+v", got)
	}
}

func TestMetadata(t *testing.T) {
	is := newIssuer(t)
	r := is.resource(t, nil)
	if r.MetadataURL() != "https://memory.example.com/.well-known/oauth-protected-resource/mcp" {
		t.Fatalf("MetadataURL %s", r.MetadataURL())
	}
	if !slices.Equal(r.Paths(), []string{WellKnown, WellKnown + "/mcp"}) {
		t.Fatalf("Paths %v", r.Paths())
	}
	rec := httptest.NewRecorder()
	r.Handler().ServeHTTP(rec, httptest.NewRequest("GET", WellKnown+"/mcp", nil))
	var doc map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc["resource"] != resource || doc["authorization_servers"].([]any)[0] != is.srv.URL || len(doc["scopes_supported"].([]any)) != 3 || doc["bearer_methods_supported"].([]any)[0] != "header" {
		t.Fatalf("metadata %v", doc)
	}
	req := httptest.NewRequest("GET", "/mcp", nil)
	got := r.Authenticate(req)
	if got.Status != 401 || got.Challenge != `Bearer resource_metadata="https://memory.example.com/.well-known/oauth-protected-resource/mcp"` {
		t.Fatalf("no token: %+v", got)
	}
	if c := r.InsufficientScope(scopes.Write); !strings.Contains(c, `error="insufficient_scope", scope="memory:write"`) {
		t.Fatalf("InsufficientScope %s", c)
	}
}

func TestNewRefuses(t *testing.T) {
	for _, c := range []Config{
		{Issuer: "ftp://x", Resource: resource},
		{Issuer: "https://as.example.com?x=1", Resource: resource},
		{Issuer: "https://as.example.com", Resource: "memory"},
		{Issuer: "https://as.example.com", Resource: resource, AgentClaim: "a b"},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) succeeded", c)
		}
	}
}

// A foreign issuer's metadata (another issuer named) is not used.
func TestDiscoverChecksTheIssuer(t *testing.T) {
	is := newIssuer(t)
	r, _ := New(Config{Issuer: is.srv.URL + "/", Resource: resource})
	if err := r.discover(context.Background()); err == nil || !strings.Contains(err.Error(), "names the issuer") {
		t.Fatalf("discover: %v", err)
	}
}

// Requests check tokens at once: known keys, unknown ones (one refetch at
// a time), opaque ones through the cache. Run under -race by .ci/run.
func TestConcurrentChecks(t *testing.T) {
	is := newIssuer(t)
	is.active["opaque"] = map[string]any{"active": true, "client_id": "ci", "scope": "memory:read", "aud": resource, "exp": time.Now().Add(time.Hour).Unix()}
	r := is.resource(t, nil)
	good := is.sign(t, jose.RS256, is.rsaKey, "rsa1", is.claims(nil))
	unknown := is.sign(t, jose.RS256, is.rsaKey, "rsa7", is.claims(nil))
	before := is.jwksFetch.Load()
	var wg sync.WaitGroup
	for i := range 24 {
		wg.Go(func() {
			tok := []string{good, unknown, "opaque"}[i%3]
			got := r.Check(context.Background(), tok)
			if (tok == unknown) != (got.Agent == "") {
				t.Errorf("%d: %+v", i, got)
			}
		})
	}
	wg.Wait()
	// The cache was fresh from discovery: no refetch within the minute.
	if n := is.jwksFetch.Load() - before; n != 0 {
		t.Fatalf("%d JWKS fetches for unknown kids within a minute of the last", n)
	}
	// A minute later one refetch is allowed, however many ask at once.
	r.mu.Lock()
	r.keysAt = time.Now().Add(-2 * jwksRefetchEvery)
	r.mu.Unlock()
	for range 8 {
		wg.Go(func() { r.Check(context.Background(), unknown) })
	}
	wg.Wait()
	if n := is.jwksFetch.Load() - before; n != 1 {
		t.Fatalf("%d JWKS fetches after the minute, want 1", n)
	}
}

// A checked JWT is remembered until it expires, at most CacheMax: the
// next request with it needs no signature check.
func TestCheckedJWTIsRemembered(t *testing.T) {
	is := newIssuer(t)
	r := is.resource(t, nil)
	tok := is.sign(t, jose.RS256, is.rsaKey, "rsa1", is.claims(nil))
	if got := r.Check(context.Background(), tok); got.Agent == "" {
		t.Fatal(got.Why)
	}
	// The keys go, at the issuer and in the server's copy.
	is.jwks = func(w http.ResponseWriter) { _, _ = w.Write([]byte(`{"keys":[]}`)) }
	r.mu.Lock()
	r.keys = jose.JSONWebKeySet{}
	r.mu.Unlock()
	if got := r.Check(context.Background(), tok); got.Agent != "oauth:reviewer" {
		t.Fatalf("a checked token was not remembered: %+v", got)
	}
	r.now = func() time.Time { return time.Now().Add(2 * time.Minute) }
	if got := r.Check(context.Background(), tok); got.Agent != "" {
		t.Fatalf("remembered past CacheMax: %+v", got)
	}
}
