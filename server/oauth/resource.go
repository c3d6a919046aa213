package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/hashicorp/go-hclog"
)

// Bounds of the calls to the authorization server.
const (
	fetchTimeout     = 10 * time.Second
	maxDocumentBytes = 1 << 20 // metadata, JWKS and introspection answers
	jwksRefetchEvery = time.Minute
	retryFirst       = time.Second
	retryMax         = time.Minute
	clockSkew        = 30 * time.Second
)

// Config is what New needs.
type Config struct {
	// Issuer is the authorization server's issuer identifier
	// (--oauth-issuer); its metadata must name the same issuer.
	Issuer string
	// Resource is this server's canonical URL (--resource), such as
	// https://memory.example.com/mcp: the audience its tokens must name.
	Resource string
	// AgentClaim names the claim that identifies the agent
	// (--oauth-agent-claim); "" is client_id, else sub.
	AgentClaim string
	// ClientID and ClientSecret authenticate this server to the issuer's
	// introspection endpoint (--oauth-introspection-secret); without them
	// opaque tokens are refused.
	ClientID, ClientSecret string
	// CacheMax bounds how long a checked JWT or an introspection answer
	// is reused (--oauth-cache-s); 0 is 60 seconds.
	CacheMax time.Duration
	// Log gets what goes wrong with the issuer; nil is silent.
	Log hclog.Logger

	// For tests: the HTTP client (nil: one with fetchTimeout), the clock
	// (nil: time.Now), the bound of a fetched document (0:
	// maxDocumentBytes).
	Client   *http.Client
	Now      func() time.Time
	MaxBytes int64
}

// Resource is this server as an OAuth resource server.
type Resource struct {
	cfg            Config
	client         *http.Client
	now            func() time.Time
	maxBytes       int64
	metadataURL    string // where Handler answers, named in every 401
	metadataPrefix string // its scheme and host

	mu       sync.Mutex
	meta     *issuerMetadata // nil until discovered
	lastErr  error
	keys     jose.JSONWebKeySet
	keysAt   time.Time // the last JWKS fetch, whatever its outcome
	fetching sync.Mutex
	seen     map[string]cached // sha256 of a token -> what was found of it
}

type issuerMetadata struct {
	Issuer                string   `json:"issuer"`
	JWKSURI               string   `json:"jwks_uri"`
	IntrospectionEndpoint string   `json:"introspection_endpoint"`
	ScopesSupported       []string `json:"scopes_supported"`
}

// New checks cfg; Run then reads the issuer's metadata.
func New(cfg Config) (*Resource, error) {
	iss, err := url.Parse(cfg.Issuer)
	if err != nil || (iss.Scheme != "https" && iss.Scheme != "http") || iss.Host == "" || iss.RawQuery != "" || iss.Fragment != "" {
		return nil, fmt.Errorf("--oauth-issuer %q must be an http(s) URL without query or fragment (the issuer your authorization server names in its metadata)", cfg.Issuer)
	}
	res, err := url.Parse(cfg.Resource)
	if err != nil || (res.Scheme != "https" && res.Scheme != "http") || res.Host == "" || res.Fragment != "" {
		return nil, fmt.Errorf("--resource %q must be this server's canonical http(s) URL, such as https://memory.example.com/mcp", cfg.Resource)
	}
	if cfg.AgentClaim != "" && !claimName.MatchString(cfg.AgentClaim) {
		return nil, fmt.Errorf("--oauth-agent-claim %q is not a claim name", cfg.AgentClaim)
	}
	r := &Resource{cfg: cfg, client: cfg.Client, now: cfg.Now, maxBytes: cfg.MaxBytes, seen: map[string]cached{}}
	if r.client == nil {
		r.client = &http.Client{Timeout: fetchTimeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if r.now == nil {
		r.now = time.Now
	}
	if r.maxBytes == 0 {
		r.maxBytes = maxDocumentBytes
	}
	if r.cfg.CacheMax == 0 {
		r.cfg.CacheMax = time.Minute
	}
	if r.cfg.Log == nil {
		r.cfg.Log = hclog.NewNullLogger()
	}
	// RFC 9728 section 3.1: the well-known name goes between the host and
	// the resource's path.
	r.metadataPrefix = res.Scheme + "://" + res.Host
	r.metadataURL = r.metadataPrefix + WellKnown + strings.TrimSuffix(res.EscapedPath(), "/")
	return r, nil
}

// metadataPath is MetadataURL's path.
func (r *Resource) metadataPath() string { return strings.TrimPrefix(r.metadataURL, r.metadataPrefix) }

var claimName = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`)

// WellKnown is the path of RFC 9728 metadata (with the resource's path
// after it for a resource that has one).
const WellKnown = "/.well-known/oauth-protected-resource"

// MetadataURL is where this server's RFC 9728 metadata is.
func (r *Resource) MetadataURL() string { return r.metadataURL }

// Run reads the issuer's metadata and JWKS, retrying with backoff (1 s
// doubling to a minute) while they cannot be had, until it succeeds or
// ctx ends. Until then Authenticate answers 503 for a token it would
// have to check.
func (r *Resource) Run(ctx context.Context) {
	wait := retryFirst
	for {
		err := r.discover(ctx)
		if err == nil {
			r.cfg.Log.Info("OAuth: the authorization server's metadata is read", "issuer", r.cfg.Issuer, "jwks", r.meta.JWKSURI, "introspection", r.meta.IntrospectionEndpoint != "" && r.cfg.ClientID != "")
			return
		}
		r.mu.Lock()
		r.lastErr = err
		r.mu.Unlock()
		r.cfg.Log.Warn("OAuth: cannot read the authorization server's metadata; OAuth tokens are refused until it answers (static tokens still work)", "issuer", r.cfg.Issuer, "error", err, "retry-in", wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, retryMax)
	}
}

// Ready reports whether the issuer's metadata has been read.
func (r *Resource) Ready() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.meta != nil
}

// discover reads the metadata at RFC 8414's place, else OpenID
// discovery's, and then the JWKS.
func (r *Resource) discover(ctx context.Context) error {
	iss, _ := url.Parse(r.cfg.Issuer)
	path := strings.TrimSuffix(iss.EscapedPath(), "/")
	base := iss.Scheme + "://" + iss.Host
	candidates := []string{
		base + "/.well-known/oauth-authorization-server" + path,
		strings.TrimSuffix(r.cfg.Issuer, "/") + "/.well-known/openid-configuration",
	}
	var errs []error
	for _, u := range candidates {
		var m issuerMetadata
		if err := r.getJSON(ctx, u, &m); err != nil {
			errs = append(errs, err)
			continue
		}
		if m.Issuer != r.cfg.Issuer {
			// RFC 8414 section 3.3: a metadata document for another issuer
			// is not this one's.
			errs = append(errs, fmt.Errorf("%s names the issuer %q, not --oauth-issuer %q", u, m.Issuer, r.cfg.Issuer))
			continue
		}
		if m.JWKSURI == "" && m.IntrospectionEndpoint == "" {
			errs = append(errs, fmt.Errorf("%s has neither jwks_uri nor introspection_endpoint", u))
			continue
		}
		if m.JWKSURI != "" {
			if err := r.fetchKeys(ctx, m.JWKSURI); err != nil {
				return err
			}
		}
		r.mu.Lock()
		r.meta, r.lastErr = &m, nil
		r.mu.Unlock()
		return nil
	}
	return errors.Join(errs...)
}

// getJSON reads a JSON document of at most maxBytes within the client's
// time bound.
func (r *Resource) getJSON(ctx context.Context, u string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return r.decode(u, resp, out)
}

func (r *Resource) decode(u string, resp *http.Response, out any) error {
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", u, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, r.maxBytes+1))
	if err != nil {
		return fmt.Errorf("%s: %w", u, err)
	}
	if int64(len(body)) > r.maxBytes {
		return fmt.Errorf("%s answered more than %d bytes", u, r.maxBytes)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("%s: %w", u, err)
	}
	return nil
}

// fetchKeys replaces the cached JWKS with the one at u. Only public,
// asymmetric keys are kept.
func (r *Resource) fetchKeys(ctx context.Context, u string) error {
	var set jose.JSONWebKeySet
	err := r.getJSON(ctx, u, &set)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keysAt = r.now()
	if err != nil {
		return fmt.Errorf("JWKS: %w", err)
	}
	var keep []jose.JSONWebKey
	for _, k := range set.Keys {
		if k.IsPublic() && k.Use != "enc" {
			keep = append(keep, k)
		}
	}
	r.keys = jose.JSONWebKeySet{Keys: keep}
	return nil
}
