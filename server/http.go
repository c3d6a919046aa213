package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/config"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server/mcpstdio"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server/tokens"
)

// MCP over Streamable HTTP (SPEC 11). mcp-go's StreamableHTTPServer speaks
// both protocol generations at /mcp; in front of it a guard checks, in
// this order, Host, Origin, a token in the URL, the bearer token, the body
// size and the session count, and puts the token's agent name in the
// request's context, where the tool handlers find it (AgentFrom) for the
// audit row, the memory's session column and the per-agent call limit.

// Bounds of the HTTP server that have no flag.
const (
	bodyReadTimeout = 60 * time.Second // a request body must arrive within this
	idleTimeout     = 120 * time.Second
	sessionIdleTTL  = 30 * time.Minute // a 2025-11-25 session unused this long ends
	maxHeaderBytes  = 64 << 10
)

type agentKey struct{}

// AgentFrom is the agent (its token's name) a request came from, or ""
// over stdio and for in-process calls.
func AgentFrom(ctx context.Context) string {
	a, _ := ctx.Value(agentKey{}).(string)
	return a
}

// WithAgent marks ctx as a call of agent (the HTTP guard does it; tests
// of handlers too).
func WithAgent(ctx context.Context, agent string) context.Context {
	return context.WithValue(ctx, agentKey{}, agent)
}

// HTTPOptions are what ServeHTTP needs beyond the configuration.
type HTTPOptions struct {
	// Tokens are the agents' tokens (tokens.Open of --auth-tokens).
	Tokens *tokens.Set
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
// before the database is opened. The listener closes connections beyond
// --max-connections at once.
func ListenHTTP(cfg *config.Config) (net.Listener, error) {
	l, err := net.Listen("tcp", cfg.HTTP)
	if err != nil {
		return nil, fmt.Errorf("--http %s: %w", cfg.HTTP, err)
	}
	return &limitListener{Listener: l, max: int64(cfg.MaxConnections)}, nil
}

// ServeHTTP serves MCP over Streamable HTTP on l until ctx ends (SIGTERM),
// then stops accepting, lets the calls in flight finish for
// --shutdown-grace, stops those still running (their workers killed,
// audited as CANCELLED), writes the audit queue and returns.
func (s *Server) ServeHTTP(ctx context.Context, l net.Listener, opt HTTPOptions) error {
	cfg := s.cfg
	sessions := &sessionTable{max: cfg.MaxSessions}
	httpSrv := &http.Server{
		ReadHeaderTimeout: cfg.HeaderTimeout,
		// No ReadTimeout or WriteTimeout: both would end a long call (a
		// confirmation waits minutes; net/http cancels a request's context
		// when the connection's read deadline passes). The guard bounds the
		// body's read instead.
		IdleTimeout:    idleTimeout,
		MaxHeaderBytes: maxHeaderBytes,
		ErrorLog:       s.log.Named("http").StandardLogger(&hclog.StandardLoggerOptions{ForceLevel: hclog.Debug}),
	}
	streamable := mcpserver.NewStreamableHTTPServer(s.mcp,
		mcpserver.WithEndpointPath("/mcp"),
		mcpserver.WithSessionIdManagerResolver(sessions),
		mcpserver.WithSessionIdleTTL(sessionIdleTTL),
		// The guard checks Host against --allowed-hosts for every
		// connection; mcp-go's own check, for loopback connections only,
		// would refuse a reverse proxy's names.
		mcpserver.WithDisableLocalhostProtection(true),
		mcpserver.WithStreamableHTTPServer(httpSrv),
		mcpserver.WithStreamableHTTPLogger(slog.New(slog.NewTextHandler(
			s.log.Named("http").StandardWriter(&hclog.StandardLoggerOptions{InferLevels: true}),
			&slog.HandlerOptions{Level: slog.LevelWarn}))),
	)
	mux := http.NewServeMux()
	mux.Handle("/mcp", streamable)
	for pattern, h := range opt.Mount {
		mux.Handle(pattern, h)
	}
	public := http.NewServeMux()
	for pattern, h := range opt.Public {
		public.Handle(pattern, h)
	}
	g := &guard{s: s, tokens: opt.Tokens, sessions: sessions, next: mux, public: public,
		hosts: map[string]bool{}, origins: map[string]bool{}, maxBody: int64(cfg.MaxBodyMB) << 20}
	// Revocation (revoke.go): a watcher of the token file, and requests
	// bound to their agent's token.
	g.revocations = s.watchRevocations(opt.Tokens, sessions)
	defer g.revocations.stopWatch()
	for _, h := range cfg.AllowedHosts {
		g.hosts[strings.ToLower(strings.Trim(h, "[]"))] = true
	}
	for _, o := range cfg.AllowedOrigins {
		g.origins[strings.ToLower(strings.TrimSuffix(o, "/"))] = true
	}
	httpSrv.Handler = g
	if tokens.PlatformNote != "" {
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

// guard is the HTTP front door.
type guard struct {
	s        *Server
	tokens   *tokens.Set
	sessions *sessionTable
	next     http.Handler
	public   *http.ServeMux // HTTPOptions.Public; nil: none
	hosts    map[string]bool
	origins  map[string]bool
	maxBody  int64

	fileErr atomic.Pointer[string] // the token file's last problem, logged once

	revocations *revocations // revoke.go; nil: none
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/healthz" {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok")
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if host := hostOnly(r.Host); !g.hosts[host] {
		g.refuse(w, r, http.StatusForbidden, "", fmt.Sprintf("Host %q is not one of this server's names; add it with --allowed-hosts if clients should use it", r.Host))
		return
	}
	if origin := r.Header.Get("Origin"); origin != "" && !g.origins[strings.ToLower(strings.TrimSuffix(origin, "/"))] {
		g.refuse(w, r, http.StatusForbidden, "", fmt.Sprintf("Origin %q is not allowed; a browser page may reach this server only from an origin in --allowed-origins", origin))
		return
	}
	if g.tokenInURL(r) {
		g.refuse(w, r, http.StatusBadRequest, "", "a token in the URL is refused (URLs end up in logs and histories; revoke that token if it was real): send it as the header Authorization: Bearer TOKEN")
		return
	}
	if g.public != nil {
		if h, pattern := g.public.Handler(r); pattern != "" {
			h.ServeHTTP(w, r)
			return
		}
	}
	agent, why := g.authenticate(r)
	if agent == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="mcp-sqlite-memory"`+why)
		g.refuse(w, r, http.StatusUnauthorized, "", "a valid token is required: send Authorization: Bearer TOKEN (make one: mcp-sqlite-memory token add NAME --auth-tokens FILE)")
		return
	}
	if r.Method == http.MethodPost && r.Body != nil {
		body, status := g.readBody(w, r)
		if status != 0 {
			msg := "the request body could not be read in time"
			if status == http.StatusRequestEntityTooLarge {
				msg = fmt.Sprintf("the request body is larger than %d MiB (--max-body-mb)", g.maxBody>>20)
			}
			g.refuse(w, r, status, agent, msg)
			return
		}
		if isInitialize(body) && r.Header.Get(mcpserver.HeaderKeySessionID) == "" && g.sessions.full() {
			w.Header().Set("Retry-After", "60")
			g.refuse(w, r, http.StatusServiceUnavailable, agent, fmt.Sprintf("the server has %d sessions open (--max-sessions); end unused ones (DELETE /mcp) or wait for idle ones to expire", g.sessions.max))
			return
		}
		if names, ok := mcpstdio.ToolCallNames(string(body)); ok {
			// As over stdio: the standby is nudged before mcp-go parses.
			g.s.prewake(names)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		w, r = withBulk(w, r)
	}
	// Revocation (revoke.go): the request ends when its token is revoked.
	ctx, endRequest := g.revocations.bind(r, agent)
	defer endRequest()
	g.next.ServeHTTP(w, r.WithContext(WithAgent(ctx, agent)))
}

// refuse answers a request the guard turns away, and logs it (at debug:
// a scan must not flood the log).
func (g *guard) refuse(w http.ResponseWriter, r *http.Request, status int, agent, msg string) {
	g.s.log.Debug("http request refused", "status", status, "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr, "agent", agent, "why", msg)
	http.Error(w, msg, status)
}

// hostOnly is the host name of a Host header, lowercased, without port
// and brackets.
func hostOnly(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return strings.ToLower(strings.Trim(host, "[]"))
}

// credentialKeys are query parameter names that carry credentials.
var credentialKeys = map[string]bool{"token": true, "access_token": true, "auth": true, "authorization": true, "bearer": true, "api_key": true, "apikey": true, "key": true}

// tokenInURL reports a credential in the query string: a parameter named
// like one, a value shaped like one of ours, or a value that is a token.
func (g *guard) tokenInURL(r *http.Request) bool {
	if r.URL.RawQuery == "" {
		return false
	}
	for k, vs := range r.URL.Query() {
		if credentialKeys[strings.ToLower(k)] {
			return true
		}
		for _, v := range vs {
			if strings.HasPrefix(v, tokens.Prefix) {
				return true
			}
			if _, ok, _ := g.tokens.Lookup(v); ok {
				return true
			}
		}
	}
	return false
}

// authenticate returns the agent of the request's bearer token, or "" and
// the WWW-Authenticate error parameter.
func (g *guard) authenticate(r *http.Request) (agent, why string) {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", ""
	}
	name, found, err := g.tokens.Lookup(strings.TrimSpace(tok))
	if err != nil {
		// The file became unreadable or unsafe: every token fails until
		// it is fixed. Said once per distinct problem.
		msg := err.Error()
		if old := g.fileErr.Swap(&msg); old == nil || *old != msg {
			g.s.log.Error("the token file is unusable; every request is refused until it is fixed", "auth-tokens", g.tokens.Path(), "error", msg)
		}
		return "", `, error="invalid_token"`
	}
	g.fileErr.Store(nil)
	if !found {
		return "", `, error="invalid_token"`
	}
	return name, ""
}

// readBody reads a POST body of at most maxBody bytes within
// bodyReadTimeout; status is 413 or 408 when it cannot.
func (g *guard) readBody(w http.ResponseWriter, r *http.Request) ([]byte, int) {
	if r.ContentLength > g.maxBody {
		return nil, http.StatusRequestEntityTooLarge
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(bodyReadTimeout))
	body, err := io.ReadAll(io.LimitReader(r.Body, g.maxBody+1))
	_ = rc.SetReadDeadline(time.Time{})
	if int64(len(body)) > g.maxBody {
		return nil, http.StatusRequestEntityTooLarge
	}
	if err != nil {
		return nil, http.StatusRequestTimeout
	}
	return body, 0
}

// isInitialize tells a body that opens a 2025-11-25 session.
func isInitialize(body []byte) bool {
	var m struct {
		Method string `json:"method"`
	}
	return json.Unmarshal(body, &m) == nil && m.Method == "initialize"
}

// sessionTable issues the 2025-11-25 session ids (Mcp-Session-Id), at most
// max at once, and binds each to the agent that opened it: another
// agent's token cannot use, listen to or end it. It is mcp-go's session
// id manager resolver, handed the request (and so its agent).
type sessionTable struct {
	max int

	mu     sync.Mutex
	agents map[string]string // session id -> agent
}

// agentSessions is the table as one agent's requests see it; agent ""
// (mcp-go's idle sweeper, shutdown) may end any session.
type agentSessions struct {
	t     *sessionTable
	agent string
}

func (t *sessionTable) ResolveSessionIdManager(r *http.Request) mcpserver.SessionIdManager {
	a := agentSessions{t: t}
	if r != nil {
		a.agent = AgentFrom(r.Context())
	}
	return a
}

func (t *sessionTable) full() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.agents) >= t.max
}

func (a agentSessions) Generate() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails on supported platforms
	id := hex.EncodeToString(b[:])
	a.t.mu.Lock()
	defer a.t.mu.Unlock()
	if a.t.agents == nil {
		a.t.agents = map[string]string{}
	}
	a.t.agents[id] = a.agent
	return id
}

var errUnknownSession = errors.New("unknown session")

func (a agentSessions) Validate(id string) (bool, error) {
	a.t.mu.Lock()
	defer a.t.mu.Unlock()
	owner, ok := a.t.agents[id]
	if !ok || owner != a.agent {
		return false, errUnknownSession
	}
	return false, nil
}

func (a agentSessions) Terminate(id string) (bool, error) {
	a.t.mu.Lock()
	defer a.t.mu.Unlock()
	owner, ok := a.t.agents[id]
	if !ok {
		return false, nil
	}
	if a.agent != "" && owner != a.agent {
		return true, nil
	}
	delete(a.t.agents, id)
	return false, nil
}

// limitListener closes connections beyond max at once: the bound on open
// connections (idle keep-alive ones count until IdleTimeout closes them).
type limitListener struct {
	net.Listener
	max  int64
	open atomic.Int64
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) > l.max {
			l.open.Add(-1)
			_ = c.Close()
			continue
		}
		return &countedConn{Conn: c, l: l}, nil
	}
}

type countedConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.l.open.Add(-1) })
	return c.Conn.Close()
}
