package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/config"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server/httpguard"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server/mcpstdio"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server/oauth"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server/tokens"
)

// MCP over Streamable HTTP (SPEC 11). mcp-go's StreamableHTTPServer speaks
// both protocol generations at /mcp; in front of it the front door
// (frontDoor), one chain of httpguard checks, checks in this order Host,
// Origin, a token in the URL, the bearer token, the session a request
// names (the agent's own; sessions.go), the body (size and time), the
// sessions an initialize may open and an OAuth agent's scope for a
// tools/call (scoped.go), and puts the token's agent name and scopes in
// the request's context, where the tool handlers find them (AgentFrom)
// for the audit row, the memory's session column, the per-agent call
// limit and the scope check. The bearer token is a static one
// (--auth-tokens), else an OAuth access token (package oauth). The listener (httpguard.Listener) keeps connection slots for
// authenticated clients.

// Bounds of the HTTP server that have no flag.
const (
	idleTimeout    = 120 * time.Second
	sessionIdleTTL = 30 * time.Minute // a 2025-11-25 session unused this long ends
	maxHeaderBytes = 64 << 10
)

// AgentFrom is the agent (its token's name) a request came from, or ""
// over stdio and for in-process calls.
func AgentFrom(ctx context.Context) string {
	return httpguard.IdentityFrom(ctx).Agent
}

// WithAgent marks ctx as a call of agent (the HTTP front door does it;
// tests of handlers too).
func WithAgent(ctx context.Context, agent string) context.Context {
	return httpguard.WithIdentity(ctx, httpguard.Identity{Agent: agent})
}

// HTTPOptions are what ServeHTTP needs beyond the configuration.
type HTTPOptions struct {
	// Tokens are the agents' tokens (tokens.Open of --auth-tokens); nil
	// with OAuth alone.
	Tokens *tokens.Set
	// OAuth checks access tokens of --oauth-issuer (nil: none). ServeHTTP
	// runs its discovery and serves its RFC 9728 metadata.
	OAuth *oauth.Resource
	// Mount adds handlers beside /mcp, by net/http ServeMux pattern (such
	// as "/ui/"), behind the same Host, Origin and token checks; AgentFrom
	// of their request's context names the agent.
	Mount map[string]http.Handler
	// Public adds handlers by pattern behind the Host, Origin and
	// URL-token checks only: they authenticate requests themselves (a
	// browser page that trades a token, checked with Tokens.Lookup, for a
	// cookie cannot send a bearer header on every request).
	Public map[string]http.Handler
}

// ListenHTTP opens --http's address, so that a port in use is reported
// before the database is opened. The listener keeps at most
// --max-connections open, at most half of them not yet authenticated
// (httpguard.Listener).
func ListenHTTP(cfg *config.Config) (net.Listener, error) {
	l, err := net.Listen("tcp", cfg.HTTP)
	if err != nil {
		return nil, fmt.Errorf("--http %s: %w", cfg.HTTP, err)
	}
	return httpguard.NewListener(l, cfg.MaxConnections), nil
}

// ServeHTTP serves MCP over Streamable HTTP on l until ctx ends (SIGTERM),
// then stops accepting, lets the calls in flight finish for
// --shutdown-grace, stops those still running (their workers killed,
// audited as CANCELLED), writes the audit queue and returns.
func (s *Server) ServeHTTP(ctx context.Context, l net.Listener, opt HTTPOptions) error {
	cfg := s.cfg
	sessions := &sessionTable{max: cfg.MaxSessions, perAgent: cfg.MaxSessionsPerAgent, idle: cfg.SessionIdle}
	httpSrv := &http.Server{
		ReadHeaderTimeout: cfg.HeaderTimeout,
		// No ReadTimeout or WriteTimeout: both would end a long call (a
		// confirmation waits minutes; net/http cancels a request's context
		// when the connection's read deadline passes). httpguard.Body
		// bounds the body's read instead (--body-timeout).
		IdleTimeout:    idleTimeout,
		MaxHeaderBytes: maxHeaderBytes,
		ErrorLog:       s.log.Named("http").StandardLogger(&hclog.StandardLoggerOptions{ForceLevel: hclog.Debug}),
	}
	streamable := mcpserver.NewStreamableHTTPServer(s.mcp,
		mcpserver.WithEndpointPath("/mcp"),
		mcpserver.WithSessionIdManagerResolver(sessions),
		mcpserver.WithSessionIdleTTL(sessionIdleTTL),
		// The front door checks Host against --allowed-hosts for every
		// connection; mcp-go's own check, for loopback connections only,
		// would refuse a reverse proxy's names.
		mcpserver.WithDisableLocalhostProtection(true),
		mcpserver.WithStreamableHTTPServer(httpSrv),
		mcpserver.WithStreamableHTTPLogger(slog.New(slog.NewTextHandler(
			s.log.Named("http").StandardWriter(&hclog.StandardLoggerOptions{InferLevels: true}),
			&slog.HandlerOptions{Level: slog.LevelWarn}))),
	)
	// Revocation (revoke.go): a watcher of the token file, and requests
	// bound to their agent's token.
	rev := s.watchRevocations(opt.Tokens, sessions)
	defer rev.stopWatch()
	httpSrv.Handler = s.frontDoor(opt, sessions, rev, streamable)
	if gl, ok := l.(*httpguard.Listener); ok {
		httpSrv.ConnContext = gl.ConnContext
	}
	sessions.end = func(id string) { endSession(streamable, id) }
	sweepCtx, stopSweep := context.WithCancel(context.Background())
	defer stopSweep()
	go sessions.sweep(sweepCtx)
	if opt.OAuth != nil {
		go opt.OAuth.Run(ctx)
	}
	if tokens.PlatformNote != "" && opt.Tokens != nil {
		s.log.Warn(tokens.PlatformNote, "auth-tokens", opt.Tokens.Path())
	}

	served := make(chan error, 1)
	scheme := "http"
	go func() {
		if cfg.TLSCert != "" {
			served <- httpSrv.ServeTLS(l, cfg.TLSCert, cfg.TLSKey)
			return
		}
		served <- httpSrv.Serve(l)
	}()
	if cfg.TLSCert != "" {
		scheme = "https"
	}
	s.log.Info("serving MCP over Streamable HTTP", "url", scheme+"://"+l.Addr().String()+"/mcp",
		"allowed-hosts", strings.Join(cfg.AllowedHosts, ","), "max-calls-per-agent", cfg.MaxCallsPerAgent)

	var err error
	select {
	case err = <-served:
		// The listener failed (or a bad certificate): nothing to drain.
	case <-ctx.Done():
		s.log.Info("stopping: no new connections; calls in flight may finish", "grace", cfg.ShutdownGrace)
		s.refuseNewCalls()
		grace, cancel := context.WithTimeout(context.Background(), cfg.ShutdownGrace)
		if serr := streamable.Shutdown(grace); serr != nil {
			s.log.Warn("calls still running after the grace period are stopped", "error", serr)
		}
		cancel()
		// Close (below) stops what is left; then the connections go.
		defer httpSrv.Close()
	}
	s.Close()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// frontDoor is the chain of checks in front of /mcp and the mounted
// pages: /healthz first (no check), then for everything else Host,
// Origin and a credential in the URL; the public pages are served from
// there; the rest needs a bearer token, and ends when that token is
// revoked (rev; nil: never). /mcp then bounds the body and the sessions;
// a mounted page bounds its body.
func (s *Server) frontDoor(opt HTTPOptions, sessions *sessionTable, rev *revocations, streamable http.Handler) http.Handler {
	cfg := s.cfg
	static := &tokenAuth{s: s, tokens: opt.Tokens}
	auth, authMsg := httpguard.Authenticator(static), "a valid token is required: send Authorization: Bearer TOKEN (make one: mcp-sqlite-memory token add NAME --auth-tokens FILE)"
	if opt.OAuth != nil {
		auth, authMsg = oauthAuth{static: static, res: opt.OAuth}, ""
	}
	maxBody := int64(cfg.MaxBodyMB) << 20
	body := httpguard.Body(httpguard.BodyLimits{
		Max: maxBody, Timeout: cfg.BodyTimeout,
		TooLarge: fmt.Sprintf("the request body is larger than %d MiB (--max-body-mb)", cfg.MaxBodyMB),
		TooSlow:  fmt.Sprintf("the request body did not arrive within %s (--body-timeout); the connection is closed", cfg.BodyTimeout),
		Read: func(_ *http.Request, body []byte) {
			if names, ok := mcpstdio.ToolCallNames(string(body)); ok {
				// As over stdio: the standby is nudged before mcp-go parses.
				s.prewake(names)
			}
		},
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", httpguard.Chain(streamable,
		sessions.owned,
		body,
		sessions.capped,
		s.stepUp(opt.OAuth),
		withBulkText,
	))
	for pattern, h := range opt.Mount {
		mux.Handle(pattern, httpguard.Chain(h, body))
	}
	authed := httpguard.Chain(mux,
		httpguard.Authenticate(auth, "mcp-sqlite-memory", authMsg),
		withScopes,
		rev.bound,
	)
	public := http.NewServeMux()
	for pattern, h := range opt.Public {
		public.Handle(pattern, h)
	}
	if opt.OAuth != nil {
		for _, p := range opt.OAuth.Paths() {
			public.Handle(p, opt.OAuth.Handler())
		}
	}
	route := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h, pattern := public.Handler(r); pattern != "" {
			h.ServeHTTP(w, r)
			return
		}
		authed.ServeHTTP(w, r)
	})
	checked := httpguard.Chain(route,
		httpguard.OnRefuse(s.logRefusal),
		httpguard.SetHeaders([2]string{"Cache-Control", "no-store"}, [2]string{"X-Content-Type-Options", "nosniff"}),
		httpguard.Host(cfg.AllowedHosts, http.StatusForbidden, func(host string) string {
			return fmt.Sprintf("Host %q is not one of this server's names; add it with --allowed-hosts if clients should use it", host)
		}),
		httpguard.Origin(httpguard.AllowedOrigins(cfg.AllowedOrigins), func(origin string) string {
			return fmt.Sprintf("Origin %q is not allowed; a browser page may reach this server only from an origin in --allowed-origins", origin)
		}),
		httpguard.NoCredentialsInURL(static.isToken, "a token in the URL is refused (URLs end up in logs and histories; revoke that token if it was real): send it as the header Authorization: Bearer TOKEN"),
	)
	return withHealthz(checked)
}

// withHealthz answers GET /healthz with ok, before any check.
func withHealthz(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			next.ServeHTTP(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok")
	})
}

// withBulkText gives a POST its bulk text and writer (httpbulk.go).
func withBulkText(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			w, r = withBulk(w, r)
		}
		next.ServeHTTP(w, r)
	})
}

// logRefusal logs a request the front door turns away (at debug: a scan
// must not flood the log).
func (s *Server) logRefusal(r *http.Request, status int, why string) {
	s.log.Debug("http request refused", "status", status, "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr, "agent", AgentFrom(r.Context()), "why", why)
}

// tokenAuth is the static bearer tokens of --auth-tokens as an
// httpguard.Authenticator: the token's name is the agent.
type tokenAuth struct {
	s      *Server
	tokens *tokens.Set

	fileErr atomic.Pointer[string] // the token file's last problem, logged once
}

var invalidToken = &httpguard.Refusal{Params: [][2]string{{"error", "invalid_token"}}}

func (a *tokenAuth) Authenticate(r *http.Request) (httpguard.Identity, *httpguard.Refusal) {
	tok, ok := httpguard.BearerToken(r)
	if !ok {
		return httpguard.Identity{}, &httpguard.Refusal{}
	}
	if a.tokens == nil {
		return httpguard.Identity{}, invalidToken
	}
	e, found, err := a.tokens.Find(tok)
	if err != nil {
		// The file became unreadable or unsafe: every token fails until
		// it is fixed. Said once per distinct problem.
		msg := err.Error()
		if old := a.fileErr.Swap(&msg); old == nil || *old != msg {
			a.s.log.Error("the token file is unusable; every request is refused until it is fixed", "auth-tokens", a.tokens.Path(), "error", msg)
		}
		return httpguard.Identity{}, invalidToken
	}
	a.fileErr.Store(nil)
	if !found {
		return httpguard.Identity{}, invalidToken
	}
	return httpguard.Identity{Agent: e.Name, Scopes: e.Scopes}, nil
}

// isToken tells a value that is, or looks like, one of the tokens.
func (a *tokenAuth) isToken(v string) bool {
	if strings.HasPrefix(v, tokens.Prefix) || looksLikeJWT(v) {
		return true
	}
	if a.tokens == nil {
		return false
	}
	_, ok, _ := a.tokens.Lookup(v)
	return ok
}

// endSession drops mcp-go's state of a session the table has ended: a
// DELETE of the session, made in process without an agent (as mcp-go's
// own sweeper ends sessions).
func endSession(streamable http.Handler, id string) {
	r, err := http.NewRequest(http.MethodDelete, "/mcp", nil)
	if err != nil {
		return
	}
	r.Header.Set(mcpserver.HeaderKeySessionID, id)
	streamable.ServeHTTP(discardResponse{}, r)
}

// discardResponse is a ResponseWriter that keeps nothing.
type discardResponse struct{}

func (discardResponse) Header() http.Header         { return http.Header{} }
func (discardResponse) Write(p []byte) (int, error) { return len(p), nil }
func (discardResponse) WriteHeader(int)             {}
