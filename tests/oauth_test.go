package tests

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// The OAuth end-to-end tests (SPEC 11.2) run against node-oidc-provider,
// the certified OpenID provider, started by the test with the config in
// testdata/oidc-provider. scripts/oidc-provider.sh installs it into a
// cache folder; .ci/run sets oidcProviderEnv to that folder.
const oidcProviderEnv = "MCP_SQLITE_OIDC_PROVIDER"

// authServer is a running oidc-provider and the RSA key it signs with
// (the test made it, so that it can sign tokens of its own with the
// issuer's key: expired ones, a foreign issuer's).
type authServer struct {
	issuer string
	key    *rsa.PrivateKey
	kid    string
}

// freePort is a loopback port free a moment ago: the provider and the
// server must know their URLs before they start (the issuer and the
// resource name them).
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startAuthServer starts oidc-provider issuing tokens for resource (and
// for other, a second resource indicator).
func startAuthServer(t *testing.T, resource, other string) *authServer {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the OAuth tests run node-oidc-provider on Linux")
	}
	dir := os.Getenv(oidcProviderEnv)
	if dir == "" {
		t.Skip(oidcProviderEnv + " is not set: the OAuth tests need node-oidc-provider; get it with: export " + oidcProviderEnv + "=\"$(scripts/oidc-provider.sh)\"")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("%s is set but node is not on PATH: %v", oidcProviderEnv, err)
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	as := &authServer{key: key, kid: "test-key"}
	jwk, _ := json.Marshal(jose.JSONWebKey{Key: key, KeyID: as.kid, Algorithm: "RS256", Use: "sig"})
	port := freePort(t)
	cfg, _ := json.Marshal(map[string]any{"dir": dir, "port": port, "resource": resource, "otherResource": other, "jwk": json.RawMessage(jwk)})
	cfgFile := filepath.Join(testDir(t), "provider.json")
	if err := os.WriteFile(cfgFile, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	script, _ := filepath.Abs(filepath.Join("testdata", "oidc-provider", "provider.mjs"))
	cmd := exec.Command(node, script, cfgFile)
	cmd.Env = append(os.Environ(), "NODE_ENV=test")
	stdout, _ := cmd.StdoutPipe()
	log := &lockedBuffer{}
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "ready "); ok {
				ready <- rest
			}
			fmt.Fprintln(log, sc.Text())
		}
		_ = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	select {
	case as.issuer = <-ready:
	case <-done:
		t.Fatalf("oidc-provider exited at start:\n%s", log.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("oidc-provider did not start:\n%s", log.String())
	}
	return as
}

// oauthMemory is a memory server with --oauth-issuer, on a port known in
// advance (its --resource names it), with a static token for "static".
type oauthMemory struct {
	*httpServer
	resource string
}

func startOAuthMemory(t *testing.T, db, resource, issuer string, flags ...string) *oauthMemory {
	t.Helper()
	return startOAuthServer(t, db, resource, issuer, true, flags...)
}

// startOAuthServer is startOAuthMemory, with static tokens or OAuth alone.
func startOAuthServer(t *testing.T, db, resource, issuer string, static bool, flags ...string) *oauthMemory {
	t.Helper()
	u, _ := url.Parse(resource)
	h := &httpServer{t: t, db: db, token: map[string]string{}, listen: u.Host}
	if static {
		h.tokens = filepath.Join(filepath.Dir(db), "tokens")
		h.token["static"] = addToken(t, h.tokens, "static")
	}
	h.start(append([]string{"--oauth-issuer", issuer, "--resource", resource}, flags...)...)
	// Until the issuer's metadata is read, OAuth tokens get 503.
	if !waitFor(30*time.Second, func() bool { return strings.Contains(h.log.String(), "metadata is read") }) {
		t.Fatalf("the server did not read the issuer's metadata:\n%s", h.log.String())
	}
	return &oauthMemory{httpServer: h, resource: resource}
}

// discoverTokenEndpoint follows what a host does after a 401: the
// challenge's resource_metadata, the RFC 9728 document, its
// authorization server's metadata.
func discoverTokenEndpoint(t *testing.T, m *oauthMemory) (tokenEndpoint, issuer string) {
	t.Helper()
	status, hdr, _ := m.rawRequest(t, "POST", "/mcp", nil, initializeBody)
	challenge := hdr.Get("WWW-Authenticate")
	const prefix = `Bearer resource_metadata="`
	if status != 401 || !strings.HasPrefix(challenge, prefix) {
		t.Fatalf("no token: %d %q, want 401 with resource_metadata", status, challenge)
	}
	metaURL := strings.TrimSuffix(strings.TrimPrefix(challenge, prefix), `"`)
	var prm struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
		ScopesSupported      []string `json:"scopes_supported"`
		BearerMethods        []string `json:"bearer_methods_supported"`
	}
	getJSON(t, metaURL, &prm)
	if prm.Resource != m.resource || len(prm.AuthorizationServers) != 1 || strings.Join(prm.ScopesSupported, " ") != "memory:read memory:write memory:destructive" || strings.Join(prm.BearerMethods, ",") != "header" {
		t.Fatalf("protected resource metadata at %s: %+v", metaURL, prm)
	}
	var asMeta struct {
		Issuer        string `json:"issuer"`
		TokenEndpoint string `json:"token_endpoint"`
	}
	getJSON(t, prm.AuthorizationServers[0]+"/.well-known/openid-configuration", &asMeta)
	return asMeta.TokenEndpoint, asMeta.Issuer
}

func getJSON(t *testing.T, u string, out any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %s %s", u, resp.Status, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
}

// clientCredentials gets an access token of client for resource.
func clientCredentials(t *testing.T, tokenEndpoint, clientID, secret, scope, resource string) string {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {scope}, "resource": {resource}}
	req, _ := http.NewRequest("POST", tokenEndpoint, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(clientID, secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
		Scope       string `json:"scope"`
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &tok); err != nil || resp.StatusCode != 200 || tok.AccessToken == "" {
		t.Fatalf("client credentials of %s: %s %s", clientID, resp.Status, b)
	}
	return tok.AccessToken
}

// connectBearer opens an MCP client that sends token.
func (m *oauthMemory) connectBearer(t *testing.T, token string) *session {
	t.Helper()
	m.token["bearer"] = token
	return m.connect(t, "bearer", false)
}

func toolNames(t *testing.T, s *session) string {
	t.Helper()
	res, err := s.c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return strings.Join(names, ",")
}

const readTools = "describe_table,get_resume_context,get_schema,list_tables,read_query,recall,search_text,verify_chain"

// TestOAuthClientCredentials: a host discovers the authorization server
// from a 401, gets JWT access tokens by client credentials from
// oidc-provider for --resource, and calls tools within its scopes: a
// read-only agent sees the 8 read tools, a write is 403 insufficient_scope and
// audited; an agent with all scopes writes events that name
// oauth:<client> in a chain that verifies as the reference does.
func TestOAuthClientCredentials(t *testing.T) {
	t.Parallel()
	resource := fmt.Sprintf("http://127.0.0.1:%d/mcp", freePort(t))
	other := "https://other.example.com/mcp"
	as := startAuthServer(t, resource, other)
	db := referenceDB(t)
	m := startOAuthMemory(t, db, resource, as.issuer)
	tokenEndpoint, issuer := discoverTokenEndpoint(t, m)
	if issuer != as.issuer {
		t.Fatalf("issuer %s, want %s", issuer, as.issuer)
	}

	reader := clientCredentials(t, tokenEndpoint, "reader", "reader-secret", "memory:read", resource)
	r := m.connectBearer(t, reader)
	if got := sortedList(toolNames(t, r)); got != readTools {
		t.Fatalf("the reader's tools: %s, want %s", got, readTools)
	}
	r.ok("read_query", q("SELECT 1"))
	// A write: 403 with the step-up challenge, before mcp-go parses it.
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"write_query","arguments":{"query":"CREATE TABLE t(x)"}}}`
	status, hdr, text := m.rawRequest(t, "POST", "/mcp", map[string]string{"Authorization": "Bearer " + reader, "Mcp-Session-Id": r.c.GetSessionId()}, body)
	if status != 403 || !strings.Contains(hdr.Get("WWW-Authenticate"), `error="insufficient_scope", scope="memory:write"`) ||
		!strings.Contains(hdr.Get("WWW-Authenticate"), `resource_metadata="http://`) || !strings.Contains(text, "FORBIDDEN: write_query needs scope memory:write; ask for a token with it") {
		t.Fatalf("write by the reader: %d %q %s", status, hdr.Get("WWW-Authenticate"), text)
	}
	row := waitAudit(t, db, "FORBIDDEN")
	if row.tool != "write_query" || !strings.Contains(row.detail, `"agent": "oauth:reader"`) || !strings.Contains(row.detail, `"missing_scope": "memory:write"`) {
		t.Fatalf("audit row of the refused write: %+v", row)
	}
	// The client library sees the refusal too.
	req := mcp.CallToolRequest{}
	req.Params.Name = "destructive_query"
	req.Params.Arguments = map[string]any{"query": "DELETE FROM memory_events", "reason": "x"}
	if _, err := r.c.CallTool(context.Background(), req); err == nil {
		t.Fatal("destructive_query by the reader succeeded")
	}

	writer := clientCredentials(t, tokenEndpoint, "writer", "writer-secret", "memory:read memory:write memory:destructive", resource)
	w := m.connectBearer(t, writer)
	if got := toolNames(t, w); strings.Count(got, ",") != 13 {
		t.Fatalf("the writer's tools: %s, want 14", got)
	}
	w.ok("append_event", map[string]any{"content": "written over OAuth"})
	w.ok("checkpoint", map[string]any{"summary": "OAuth works"})
	sessions := checkChainByHand(t, db)
	var mine int
	for _, s := range sessions {
		if strings.HasSuffix(s, "@oauth:writer") {
			mine++
		}
	}
	if mine != 1 {
		t.Fatalf("%d events name oauth:writer; sessions %v", mine, sessions)
	}
	referenceAppend(t, db, "2026-12-04T00:00:00Z", "note", "the reference after an OAuth agent")
	if v := w.verify(); !v.OK || v.Events != len(sessions)+1 {
		t.Fatalf("verify_chain after a reference append: %+v", v)
	}
	w.audited(db)
	var n int
	if err := openDirect(t, db).QueryRow(`SELECT count(*) FROM query_log WHERE session LIKE '%@oauth:writer' AND json_extract(detail, '$.agent') = 'oauth:writer'`).Scan(&n); err != nil || int64(n) != w.calls.Load() {
		t.Fatalf("%d of %d audit rows name oauth:writer (%v)", n, w.calls.Load(), err)
	}

	// The view needs memory:read: the reader's token opens it, a token
	// with memory:write alone does not.
	writeOnly := clientCredentials(t, tokenEndpoint, "writer", "writer-secret", "memory:write", resource)
	for name, c := range map[string]struct {
		token string
		want  int
	}{"reader": {reader, 200}, "write only": {writeOnly, 401}} {
		if status, _, _ := m.rawRequest(t, "GET", "/ui/", map[string]string{"Authorization": "Bearer " + c.token}, ""); status != c.want {
			t.Fatalf("/ui/ with the %s token: %d, want %d", name, status, c.want)
		}
	}

	// The static token works beside OAuth.
	st := m.connect(t, "static", false)
	st.ok("read_query", q("SELECT 1"))
}

// sortedList sorts a comma-separated list.
func sortedList(csv string) string {
	l := strings.Split(csv, ",")
	slices.Sort(l)
	return strings.Join(l, ",")
}

// TestOAuthRefusals: every token the server must refuse, each with its
// status and challenge; the JWTs of the test are signed with the real
// issuer's key unless the case is about the key.
func TestOAuthRefusals(t *testing.T) {
	t.Parallel()
	resource := fmt.Sprintf("http://127.0.0.1:%d/mcp", freePort(t))
	other := "https://other.example.com/mcp"
	as := startAuthServer(t, resource, other)
	db := newDB(t)
	m := startOAuthMemory(t, db, resource, as.issuer)
	tokenEndpoint, _ := discoverTokenEndpoint(t, m)
	good := clientCredentials(t, tokenEndpoint, "writer", "writer-secret", "memory:read", resource)
	forOther := clientCredentials(t, tokenEndpoint, "writer", "writer-secret", "memory:read", other)

	sign := func(alg jose.SignatureAlgorithm, key any, mod map[string]any) string {
		c := map[string]any{"iss": as.issuer, "aud": resource, "exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix(), "client_id": "mallory", "scope": "memory:read memory:write memory:destructive"}
		for k, v := range mod {
			c[k] = v
		}
		s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, (&jose.SignerOptions{}).WithType("at+jwt").WithHeader("kid", as.kid))
		if err != nil {
			t.Fatal(err)
		}
		tok, err := jwt.Signed(s).Claims(c).Serialize()
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	stranger, _ := rsa.GenerateKey(rand.Reader, 2048)
	pubDER, _ := x509.MarshalPKIXPublicKey(&as.key.PublicKey)
	b64 := base64.RawURLEncoding.EncodeToString
	payload := strings.Split(good, ".")[1]

	// A revoked static token.
	revoked := addToken(t, m.tokens, "gone")
	if out, err := exec.Command(serverBin, "token", "revoke", "gone", "--auth-tokens", m.tokens).CombinedOutput(); err != nil {
		t.Fatalf("token revoke: %v %s", err, out)
	}
	challenge := `Bearer resource_metadata="` + strings.TrimSuffix(resource, "/mcp") + `/.well-known/oauth-protected-resource/mcp"`
	cases := []struct {
		name, path, token string
		status            int
		header            string
	}{
		{"the good token passes", "/mcp", good, 200, ""},
		{"no token", "/mcp", "", 401, challenge},
		{"expired", "/mcp", sign(jose.RS256, as.key, map[string]any{"exp": time.Now().Add(-time.Hour).Unix()}), 401, challenge + `, error="invalid_token"`},
		{"for another audience", "/mcp", forOther, 401, challenge + `, error="invalid_token"`},
		{"a foreign issuer", "/mcp", sign(jose.RS256, as.key, map[string]any{"iss": "https://evil.example.com"}), 401, challenge + `, error="invalid_token"`},
		{"a bad signature", "/mcp", sign(jose.RS256, stranger, nil), 401, challenge + `, error="invalid_token"`},
		{"alg none", "/mcp", b64([]byte(`{"alg":"none","typ":"at+jwt","kid":"`+as.kid+`"}`)) + "." + payload + ".", 401, challenge + `, error="invalid_token"`},
		{"HMAC signed with the public key", "/mcp", sign(jose.HS256, pubDER, nil), 401, challenge + `, error="invalid_token"`},
		{"a revoked static token", "/mcp", revoked, 401, challenge + `, error="invalid_token"`},
		{"a token in the URL", "/mcp?access_token=" + good, "", 400, ""},
		{"a JWT in any parameter", "/mcp?x=" + good, "", 400, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := map[string]string{}
			if c.token != "" {
				h["Authorization"] = "Bearer " + c.token
			}
			status, hdr, body := m.rawRequest(t, "POST", c.path, h, initializeBody)
			if status != c.status || hdr.Get("WWW-Authenticate") != c.header {
				t.Fatalf("%d %q, want %d %q\n%s", status, hdr.Get("WWW-Authenticate"), c.status, c.header, body)
			}
		})
	}
	// The metadata is public, at both names.
	for _, p := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
		if status, _, body := m.rawRequest(t, "GET", p, nil, ""); status != 200 || !strings.Contains(body, `"resource":"`+resource+`"`) {
			t.Fatalf("GET %s: %d %s", p, status, body)
		}
	}
}

// TestOAuthIntrospection: an opaque access token (oidc-provider's
// introspection feature) is checked at the issuer with the server's
// client credentials.
func TestOAuthIntrospection(t *testing.T) {
	t.Parallel()
	resource := fmt.Sprintf("http://127.0.0.1:%d/mcp", freePort(t))
	as := startAuthServer(t, resource, "https://other.example.com/mcp")
	db := newDB(t)
	secret := filepath.Join(testDir(t), "introspection")
	if err := os.WriteFile(secret, []byte("memory-server:memory-server-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := startOAuthMemory(t, db, resource, as.issuer, "--oauth-introspection-secret", secret)
	tokenEndpoint, _ := discoverTokenEndpoint(t, m)
	opaque := clientCredentials(t, tokenEndpoint, "opaque", "opaque-secret", "memory:read", resource)
	if strings.Count(opaque, ".") == 2 {
		t.Fatalf("the opaque client got a JWT: %s", opaque)
	}
	s := m.connectBearer(t, opaque)
	if got := sortedList(toolNames(t, s)); got != readTools {
		t.Fatalf("tools: %s", got)
	}
	s.ok("read_query", q("SELECT 1"))
	s.audited(db)
	var n int
	if err := openDirect(t, db).QueryRow(`SELECT count(*) FROM query_log WHERE json_extract(detail, '$.agent') = 'oauth:opaque'`).Scan(&n); err != nil || n == 0 {
		t.Fatalf("%d audit rows name oauth:opaque (%v)", n, err)
	}
	// A made-up opaque token: the issuer says it is not active.
	if status, hdr, _ := m.rawRequest(t, "POST", "/mcp", map[string]string{"Authorization": "Bearer made-up-opaque-token"}, initializeBody); status != 401 || !strings.Contains(hdr.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Fatalf("a made-up opaque token: %d %q", status, hdr.Get("WWW-Authenticate"))
	}
}

// TestStaticTokenScopes: a static token made with --scopes memory:read
// sees the 8 read tools and its write is FORBIDDEN (a tool error: a
// static token has no step-up), audited; token scopes widens it without a
// restart; the view needs memory:read.
func TestStaticTokenScopes(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	tokensFile := filepath.Join(filepath.Dir(db), "tokens")
	addTokenScoped := func(agent, scopes string) string {
		out, err := exec.Command(serverBin, "token", "add", agent, "--scopes", scopes, "--auth-tokens", tokensFile).Output()
		if err != nil {
			t.Fatalf("token add %s: %v", agent, err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		return lines[len(lines)-1]
	}
	h := &httpServer{t: t, db: db, tokens: tokensFile, token: map[string]string{}}
	h.token["reviewer"] = addTokenScoped("reviewer", "memory:read")
	h.token["scribe"] = addTokenScoped("scribe", "memory:write")
	h.start()
	rv := h.connect(t, "reviewer", false)
	if got := sortedList(toolNames(t, rv)); got != readTools {
		t.Fatalf("reviewer's tools: %s", got)
	}
	rv.ok("read_query", q("SELECT 1"))
	if got := rv.fails("write_query", q("CREATE TABLE t(x)"), "FORBIDDEN"); !strings.Contains(got, "write_query needs scope memory:write; ask for a token with it") {
		t.Fatalf("write by the reviewer: %s", got)
	}
	row := waitAudit(t, db, "FORBIDDEN")
	if row.tool != "write_query" || !strings.Contains(row.detail, `"agent": "reviewer"`) || !strings.Contains(row.detail, `"missing_scope": "memory:write"`) {
		t.Fatalf("audit row: %+v", row)
	}
	sc := h.connect(t, "scribe", true)
	if got := sortedList(toolNames(t, sc)); got != "append_event,checkpoint,create_view,snapshot,write_query" {
		t.Fatalf("scribe's tools: %s", got)
	}
	sc.fails("read_query", q("SELECT 1"), "FORBIDDEN")
	// The view: memory:read only.
	for agent, want := range map[string]int{"reviewer": 200, "scribe": 401} {
		status, _, _ := h.rawRequest(t, "GET", "/ui/", map[string]string{"Authorization": "Bearer " + h.token[agent]}, "")
		if status != want {
			t.Fatalf("/ui/ for %s: %d, want %d", agent, status, want)
		}
	}
	// Widened without a restart.
	if out, err := exec.Command(serverBin, "token", "scopes", "reviewer", "memory:read,memory:write", "--auth-tokens", tokensFile).CombinedOutput(); err != nil {
		t.Fatalf("token scopes: %v %s", err, out)
	}
	rv.ok("write_query", q("CREATE TABLE t(x)"))
	if got := toolNames(t, rv); strings.Count(got, ",") != 12 {
		t.Fatalf("reviewer's tools after token scopes: %s, want 13", got)
	}
	list, _ := exec.Command(serverBin, "token", "list", "--auth-tokens", tokensFile).Output()
	if !strings.Contains(string(list), "reviewer  memory:read,memory:write  ") {
		t.Fatalf("token list:\n%s", list)
	}
}

// fakeIssuer is an authorization server of the test's own making, for
// what a real one would not do: a JWKS that hangs or answers 50 MB.
func fakeIssuer(t *testing.T, l net.Listener, key *rsa.PrivateKey, jwks func(w http.ResponseWriter, r *http.Request)) string {
	t.Helper()
	base := "http://" + l.Addr().String()
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": base, "jwks_uri": base + "/jwks"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		if jwks != nil {
			jwks(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	})
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return base
}

// TestOAuthIssuerBounds: an issuer that cannot be reached at start does
// not stop the server (static tokens work, OAuth tokens get 503 with
// Retry-After), and once it answers the server reads it on its own; a
// JWKS that hangs or answers 50 MB is cut off by the server's bounds.
func TestOAuthIssuerBounds(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("the OAuth tests run node-oidc-provider on Linux")
	}
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	sign := func(issuer, resource string) string {
		s, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, (&jose.SignerOptions{}).WithHeader("kid", "k1"))
		tok, _ := jwt.Signed(s).Claims(map[string]any{"iss": issuer, "aud": resource, "exp": time.Now().Add(time.Hour).Unix(), "client_id": "late", "scope": "memory:read"}).Serialize()
		return tok
	}

	t.Run("unreachable at start", func(t *testing.T) {
		t.Parallel()
		issuerPort := freePort(t)
		issuer := fmt.Sprintf("http://127.0.0.1:%d", issuerPort)
		resource := fmt.Sprintf("http://127.0.0.1:%d/mcp", freePort(t))
		u, _ := url.Parse(resource)
		db := newDB(t)
		h := &httpServer{t: t, db: db, tokens: filepath.Join(filepath.Dir(db), "tokens"), token: map[string]string{}, listen: u.Host}
		h.token["static"] = addToken(t, h.tokens, "static")
		h.start("--oauth-issuer", issuer, "--resource", resource)
		if !waitFor(30*time.Second, func() bool {
			return strings.Contains(h.log.String(), "cannot read the authorization server's metadata")
		}) {
			t.Fatalf("no warning about the issuer:\n%s", h.log.String())
		}
		h.connect(t, "static", false).ok("read_query", q("SELECT 1"))
		tok := sign(issuer, resource)
		status, hdr, _ := h.rawRequest(t, "POST", "/mcp", map[string]string{"Authorization": "Bearer " + tok}, initializeBody)
		if status != 503 || hdr.Get("Retry-After") == "" || !strings.Contains(hdr.Get("WWW-Authenticate"), "resource_metadata=") {
			t.Fatalf("an OAuth token before the issuer answers: %d %v", status, hdr)
		}
		// The issuer comes up; the server's retries find it.
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", issuerPort))
		if err != nil {
			t.Skipf("the issuer's port was taken meanwhile: %v", err)
		}
		fakeIssuer(t, l, key, nil)
		if !waitFor(90*time.Second, func() bool { return strings.Contains(h.log.String(), "metadata is read") }) {
			t.Fatalf("the server did not retry:\n%s", h.log.String())
		}
		h.token["late"] = tok
		s := h.connect(t, "late", false)
		if got := sortedList(toolNames(t, s)); got != readTools {
			t.Fatalf("tools: %s", got)
		}
	})

	for _, tc := range []struct {
		name, log string
		jwks      func(w http.ResponseWriter, r *http.Request)
	}{
		{"a JWKS that hangs", "Client.Timeout", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }},
		{"a JWKS of 50 MB", "answered more than 1048576 bytes", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, `{"keys":[{"kty":"RSA","n":"`)
			chunk := strings.Repeat("A", 1<<20)
			for range 50 {
				if _, err := io.WriteString(w, chunk); err != nil {
					return
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			issuer := fakeIssuer(t, l, key, tc.jwks)
			resource := fmt.Sprintf("http://127.0.0.1:%d/mcp", freePort(t))
			u, _ := url.Parse(resource)
			db := newDB(t)
			h := &httpServer{t: t, db: db, tokens: filepath.Join(filepath.Dir(db), "tokens"), token: map[string]string{}, listen: u.Host}
			h.token["static"] = addToken(t, h.tokens, "static")
			h.start("--oauth-issuer", issuer, "--resource", resource)
			// While the fetch is stuck or refused, the server serves.
			h.connect(t, "static", false).ok("read_query", q("SELECT 1"))
			if status, _, body := h.rawRequest(t, "GET", "/healthz", nil, ""); status != 200 || body != "ok" {
				t.Fatalf("healthz: %d %s", status, body)
			}
			if !waitFor(60*time.Second, func() bool { return strings.Contains(h.log.String(), tc.log) }) {
				t.Fatalf("no %q in the log:\n%s", tc.log, h.log.String())
			}
			status, _, _ := h.rawRequest(t, "POST", "/mcp", map[string]string{"Authorization": "Bearer " + sign(issuer, resource)}, initializeBody)
			if status != 503 {
				t.Fatalf("an OAuth token with no usable JWKS: %d, want 503", status)
			}
			h.connect(t, "static", true).ok("read_query", q("SELECT 2"))
		})
	}
}

// signIn drives oidc-provider's login and consent pages as a person
// would, from the authorization URL to the redirect that carries the
// code, and returns the code.
func signIn(t *testing.T, authURL, redirectURI, state string) string {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	formAction := regexp.MustCompile(`<form[^>]*action="([^"]+)"[^>]*>\s*<input type="hidden" name="prompt" value="(login|consent)"`)
	next, method, form := authURL, "GET", url.Values(nil)
	for range 12 {
		var resp *http.Response
		var err error
		if method == "GET" {
			resp, err = hc.Get(next)
		} else {
			resp, err = hc.PostForm(next, form)
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if loc := resp.Header.Get("Location"); loc != "" {
			u, _ := resp.Request.URL.Parse(loc)
			if strings.HasPrefix(u.String(), redirectURI) {
				if e := u.Query().Get("error"); e != "" {
					t.Fatalf("the authorization server refused: %s: %s", e, u.Query().Get("error_description"))
				}
				if u.Query().Get("state") != state {
					t.Fatalf("state %q, want %q", u.Query().Get("state"), state)
				}
				return u.Query().Get("code")
			}
			next, method = u.String(), "GET"
			continue
		}
		m := formAction.FindStringSubmatch(string(body))
		if m == nil {
			t.Fatalf("%s %s: %s, no login or consent form:\n%s", method, next, resp.Status, body)
		}
		u, _ := resp.Request.URL.Parse(m[1])
		next, method = u.String(), "POST"
		form = url.Values{"prompt": {m[2]}}
		if m[2] == "login" {
			form.Set("login", "alice")
			form.Set("password", "any")
		}
	}
	t.Fatal("no code after 12 steps")
	return ""
}

// TestOAuthAuthorizationCodePKCE: on a server with OAuth alone (no
// --auth-tokens), mcp-go's own OAuth client, as a host
// that signs a person in: its initialize meets the 401, it finds the
// authorization server through the RFC 9728 metadata, the person signs
// in and consents (the test drives oidc-provider's pages), the code is
// traded with PKCE for a token bound to --resource, and the client calls
// tools within the scopes it asked for.
func TestOAuthAuthorizationCodePKCE(t *testing.T) {
	t.Parallel()
	resource := fmt.Sprintf("http://127.0.0.1:%d/mcp", freePort(t))
	as := startAuthServer(t, resource, "https://other.example.com/mcp")
	db := newDB(t)
	// OAuth alone: no --auth-tokens.
	m := startOAuthServer(t, db, resource, as.issuer, false)
	const redirectURI = "http://127.0.0.1:1/callback"
	c, err := client.NewOAuthStreamableHttpClient(m.url, client.OAuthConfig{
		ClientID: "desktop", RedirectURI: redirectURI, Scopes: []string{"memory:read", "memory:write"},
		PKCEEnabled: true, TokenStore: client.NewMemoryTokenStore(),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	init.Params.ClientInfo = mcp.Implementation{Name: "e2e-oauth", Version: "1"}
	_, err = c.Initialize(ctx, init)
	if !client.IsOAuthAuthorizationRequiredError(err) {
		t.Fatalf("initialize without a token: %v, want authorization required", err)
	}
	handler := client.GetOAuthHandler(err)
	verifier, _ := client.GenerateCodeVerifier()
	state, _ := client.GenerateState()
	authURL, err := handler.GetAuthorizationURL(ctx, state, client.GenerateCodeChallenge(verifier))
	if err != nil {
		t.Fatal(err)
	}
	if u, _ := url.Parse(authURL); u.Query().Get("resource") != resource || !strings.HasPrefix(authURL, as.issuer) {
		t.Fatalf("authorization URL %s: want the issuer's, with resource=%s", authURL, resource)
	}
	code := signIn(t, authURL, redirectURI, state)
	if err := handler.ProcessAuthorizationResponse(ctx, code, state, verifier); err != nil {
		t.Fatalf("code for token: %v\n%s", err, tail(m.log.String(), 2000))
	}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize with the token: %v\n%s", err, tail(m.log.String(), 2000))
	}
	s := &session{t: t, c: c, db: db, cmd: m.cmd}
	if got := sortedList(toolNames(t, s)); got != "append_event,checkpoint,create_view,describe_table,get_resume_context,get_schema,list_tables,read_query,recall,search_text,snapshot,verify_chain,write_query" {
		t.Fatalf("tools for memory:read and memory:write: %s", got)
	}
	s.ok("append_event", map[string]any{"content": "signed in as a person"})
	s.audited(db)
	var session string
	if err := openDirect(t, db).QueryRow(`SELECT session FROM memory_events ORDER BY id DESC LIMIT 1`).Scan(&session); err != nil || !strings.HasSuffix(session, "@oauth:desktop") {
		t.Fatalf("the event's session %q (%v), want ...@oauth:desktop", session, err)
	}
}
