package oauth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server/scopes"
)

// AgentPrefix starts every OAuth agent's name.
const AgentPrefix = "oauth:"

// asymmetric are the signature algorithms a token may use: never none,
// never HMAC (a key an attacker reads from the JWKS would sign).
var asymmetric = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA,
}

// Result is what Authenticate makes of a request.
type Result struct {
	// Agent is "oauth:NAME" when the token is good; "" otherwise.
	Agent string
	// Scopes are the scopes of this server the token grants.
	Scopes []string
	// Status is 401 (no token, a bad one) or 503 (the issuer has not been
	// reached yet) when Agent is "".
	Status int
	// Challenge is the WWW-Authenticate value of a refusal.
	Challenge string
	// Why says, for the log, what was wrong.
	Why string
}

// Challenge is the WWW-Authenticate value of a 401: RFC 9728's
// resource_metadata, and RFC 6750's error when a token was sent.
func (r *Resource) Challenge(errCode string) string {
	c := fmt.Sprintf(`Bearer resource_metadata=%q`, r.metadataURL)
	if errCode != "" {
		c += fmt.Sprintf(`, error=%q`, errCode)
	}
	return c
}

// InsufficientScope is the WWW-Authenticate value of a 403 for a call
// that needs scope: the MCP spec's step-up authorization.
func (r *Resource) InsufficientScope(scope string) string {
	return fmt.Sprintf(`Bearer error="insufficient_scope", scope=%q, resource_metadata=%q, error_description=%q`,
		scope, r.metadataURL, "this call needs the scope "+scope)
}

// Authenticate checks the request's bearer token. A request without one
// gets a 401 whose challenge says where the metadata is.
func (r *Resource) Authenticate(req *http.Request) Result {
	scheme, tok, ok := strings.Cut(req.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		return Result{Status: http.StatusUnauthorized, Challenge: r.Challenge(""), Why: "no bearer token"}
	}
	return r.Check(req.Context(), strings.TrimSpace(tok))
}

// Check checks one access token.
func (r *Resource) Check(ctx context.Context, token string) Result {
	r.mu.Lock()
	meta, lastErr := r.meta, r.lastErr
	r.mu.Unlock()
	if meta == nil {
		why := "the authorization server has not been reached yet"
		if lastErr != nil {
			why += ": " + lastErr.Error()
		}
		return Result{Status: http.StatusServiceUnavailable, Challenge: r.Challenge(""), Why: why}
	}
	var agent string
	var granted []string
	var err error
	if strings.Count(token, ".") == 2 {
		// A host sends the same token with every request: a JWT checked
		// once is remembered (by its hash) until it expires, at most
		// CacheMax, which spares a signature check per request.
		key, now := string(sum(token)), r.now()
		if c, ok := r.recall(key, now); ok {
			agent, granted, err = c.agent, c.scopes, c.err
		} else {
			var exp time.Time
			agent, granted, exp, err = r.checkJWT(ctx, meta, token)
			if err == nil {
				until := now.Add(r.cfg.CacheMax)
				if exp.Before(until) {
					until = exp
				}
				r.remember(key, cached{agent: agent, scopes: granted, until: until}, now)
			}
		}
	} else {
		agent, granted, err = r.introspect(ctx, meta, token)
	}
	if err != nil {
		return Result{Status: http.StatusUnauthorized, Challenge: r.Challenge("invalid_token"), Why: err.Error()}
	}
	return Result{Agent: agent, Scopes: granted}
}

// claims are the access token's claims this server reads (RFC 9068).
type claims struct {
	jwt.Claims
	Scope    string `json:"scope"`
	Scp      any    `json:"scp"` // Entra, Okta: a list or a string
	ClientID string `json:"client_id"`
	Azp      string `json:"azp"`
}

// checkJWT checks a JWT access token and returns its agent, its scopes
// and when it expires.
func (r *Resource) checkJWT(ctx context.Context, meta *issuerMetadata, token string) (agent string, granted []string, exp time.Time, err error) {
	tok, err := jwt.ParseSigned(token, asymmetric)
	if err != nil {
		return "", nil, exp, fmt.Errorf("not a JWT signed with an asymmetric algorithm: %w", err)
	}
	if meta.JWKSURI == "" {
		return "", nil, exp, errors.New("a JWT, but the issuer publishes no jwks_uri")
	}
	kid := tok.Headers[0].KeyID
	keys := r.keysFor(kid)
	if len(keys) == 0 {
		// A key rotated in since the last fetch: fetch again, at most once
		// a minute, and not while another request fetches.
		if r.fetching.TryLock() {
			// Checked under the fetch lock: a request that saw the minute
			// pass while another fetched does not fetch again.
			r.mu.Lock()
			due := r.now().Sub(r.keysAt) >= jwksRefetchEvery
			r.mu.Unlock()
			if due {
				if err := r.fetchKeys(ctx, meta.JWKSURI); err != nil {
					r.cfg.Log.Warn("OAuth: JWKS refetch failed", "error", err)
				}
				keys = r.keysFor(kid)
			}
			r.fetching.Unlock()
		}
	}
	if len(keys) == 0 {
		return "", nil, exp, fmt.Errorf("no key %q in the issuer's JWKS", kid)
	}
	var c claims
	var all map[string]any
	verified := false
	for _, k := range keys {
		if k.Algorithm != "" && k.Algorithm != tok.Headers[0].Algorithm {
			continue
		}
		if tok.Claims(k.Key, &c, &all) == nil {
			verified = true
			break
		}
	}
	if !verified {
		return "", nil, exp, errors.New("the signature does not verify with the issuer's keys")
	}
	if c.Expiry == nil {
		return "", nil, exp, errors.New("the token has no exp")
	}
	if err := c.ValidateWithLeeway(jwt.Expected{Issuer: r.cfg.Issuer, Time: r.now()}, clockSkew); err != nil {
		return "", nil, exp, err
	}
	if !c.Audience.Contains(r.cfg.Resource) {
		return "", nil, exp, fmt.Errorf("the token's audience %v does not name this resource %s (RFC 8707: ask for a token with resource=%s)", []string(c.Audience), r.cfg.Resource, r.cfg.Resource)
	}
	if agent, err = r.agentOf(all); err != nil {
		return "", nil, exp, err
	}
	return agent, scopes.Known(scopeList(c.Scope, c.Scp)), c.Expiry.Time(), nil
}

// keysFor are the cached keys a token with key id kid may be signed with.
func (r *Resource) keysFor(kid string) []jose.JSONWebKey {
	r.mu.Lock()
	defer r.mu.Unlock()
	if kid != "" {
		return r.keys.Key(kid)
	}
	return r.keys.Keys
}

// scopeList reads scope (RFC 9068: space-separated) and scp (a list or a
// string).
func scopeList(scope string, scp any) []string {
	out := strings.Fields(scope)
	switch v := scp.(type) {
	case string:
		out = append(out, strings.Fields(v)...)
	case []any:
		for _, s := range v {
			if s, ok := s.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// agentName is what may follow "oauth:": it ends up in the memory's
// session column and in logs.
var agentName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@:-]{0,127}$`)

// agentOf names the agent from the token's claims.
func (r *Resource) agentOf(all map[string]any) (string, error) {
	names := []string{"client_id", "sub"}
	if r.cfg.AgentClaim != "" {
		names = []string{r.cfg.AgentClaim}
	}
	for _, n := range names {
		v, _ := all[n].(string)
		if v == "" {
			continue
		}
		if !agentName.MatchString(v) {
			return "", fmt.Errorf("claim %s %q cannot name an agent (1 to 128 letters, digits, '.', '_', '@', ':' or '-')", n, v)
		}
		return AgentPrefix + v, nil
	}
	return "", fmt.Errorf("the token has no %s claim to name its agent", strings.Join(names, " or "))
}

// cached is what was found of a token (a checked JWT, an introspection
// answer), kept until until.
type cached struct {
	agent  string
	scopes []string
	err    error
	until  time.Time
}

// maxCached bounds the cache of checked tokens: a flood of made-up
// opaque tokens empties it rather than growing it.
const maxCached = 10000

// introspect asks the issuer about an opaque token (RFC 7662).
func (r *Resource) introspect(ctx context.Context, meta *issuerMetadata, token string) (string, []string, error) {
	if meta.IntrospectionEndpoint == "" || r.cfg.ClientID == "" {
		return "", nil, errors.New("not a JWT, and opaque tokens need the issuer's introspection endpoint and --oauth-introspection-secret")
	}
	key := string(sum(token))
	now := r.now()
	if c, ok := r.recall(key, now); ok {
		return c.agent, c.scopes, c.err
	}

	var answer struct {
		Active   bool             `json:"active"`
		Scope    string           `json:"scope"`
		ClientID string           `json:"client_id"`
		Sub      string           `json:"sub"`
		Iss      string           `json:"iss"`
		Aud      jwt.Audience     `json:"aud"`
		Exp      *jwt.NumericDate `json:"exp"`
		Nbf      *jwt.NumericDate `json:"nbf"`
	}
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, meta.IntrospectionEndpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return "", nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(r.cfg.ClientID), url.QueryEscape(r.cfg.ClientSecret))
	resp, err := r.client.Do(req)
	if err != nil {
		// Not cached: the next request asks again.
		return "", nil, fmt.Errorf("introspection: %w", err)
	}
	var all map[string]any
	err = r.decode(meta.IntrospectionEndpoint, resp, &all)
	resp.Body.Close()
	if err == nil {
		err = remarshal(all, &answer)
	}
	if err != nil {
		return "", nil, fmt.Errorf("introspection: %w", err)
	}
	c := cached{until: now.Add(r.cfg.CacheMax)}
	switch {
	case !answer.Active:
		c.err = errors.New("the issuer says the token is not active")
	case answer.Iss != "" && answer.Iss != r.cfg.Issuer:
		c.err = fmt.Errorf("the token's issuer %q is not %s", answer.Iss, r.cfg.Issuer)
	case !answer.Aud.Contains(r.cfg.Resource):
		c.err = fmt.Errorf("the token's audience %v does not name this resource %s", []string(answer.Aud), r.cfg.Resource)
	case answer.Exp != nil && now.Add(-clockSkew).After(answer.Exp.Time()):
		c.err = errors.New("the token has expired")
	case answer.Nbf != nil && now.Add(clockSkew).Before(answer.Nbf.Time()):
		c.err = errors.New("the token is not valid yet")
	default:
		c.agent, c.err = r.agentOf(all)
		c.scopes = scopes.Known(strings.Fields(answer.Scope))
		if answer.Exp != nil && answer.Exp.Time().Before(c.until) {
			c.until = answer.Exp.Time()
		}
	}
	r.remember(key, c, now)
	return c.agent, c.scopes, c.err
}

// recall is the remembered answer for the token whose hash is key, if it
// still holds at now.
func (r *Resource) recall(key string, now time.Time) (cached, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.seen[key]
	return c, ok && now.Before(c.until)
}

// remember keeps an answer; at maxCached answers the expired ones go, and
// if none had expired, all.
func (r *Resource) remember(key string, c cached, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.seen) >= maxCached {
		for k, v := range r.seen {
			if !now.Before(v.until) {
				delete(r.seen, k)
			}
		}
		if len(r.seen) >= maxCached {
			clear(r.seen)
		}
	}
	r.seen[key] = c
}

func sum(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}
