package ui

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/memory"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server/httpguard"
)

//go:embed templates/*.html static/*
var assets embed.FS

// Options configure the pages.
type Options struct {
	// DB is the memory database; SnapshotDir its snapshot folder and Stem
	// the file's name without extension (config.Stem), which names its
	// snapshots.
	DB, SnapshotDir, Stem string
	// Base is the path the handler is mounted under ("" standalone, "/ui"
	// under --http after http.StripPrefix); links and redirects use it.
	Base string
	// Hosts are the Host header values accepted (host:port, compared
	// without regard to case). Empty refuses every request, unless
	// HostChecked.
	Hosts []string
	// HostChecked says the server in front has checked Host already
	// (--http's guard, against its bind address and --allowed-hosts).
	HostChecked bool
	// Challenge, when set, is the WWW-Authenticate header of a refused
	// request, and Refusal its text (under --http: HTTP Basic, which a
	// browser asks the person for, with a token as the password).
	Challenge, Refusal string
	// Authorized decides whether a request may see the pages, after the
	// Host, Origin and method checks. Nil refuses every request.
	Authorized func(*http.Request) bool
	// Login, when set, trades its one-time secret for its cookie (the
	// standalone ui command); Authorized is then usually Login.Authorized.
	Login *Login
	// Timeout bounds each page's reads (default 10 s).
	Timeout time.Duration
	Log     hclog.Logger
}

// UI is the read-only view of one memory database.
type UI struct {
	opt   Options
	abs   string
	db    *sql.DB       // ReadOnlyDSN connections: the pages' own statements
	store *memory.Store // read-only: the chain check and the export
	pages map[string]*template.Template
	mux   *http.ServeMux

	suggestions suggestions
	stmts       stmtCache
}

// New opens the database read-only. It fails when the file is missing, not
// SQLite, or not a memory database; it never creates or changes anything.
func New(ctx context.Context, opt Options) (*UI, error) {
	if opt.Log == nil {
		opt.Log = hclog.NewNullLogger()
	}
	if opt.Timeout <= 0 {
		opt.Timeout = 10 * time.Second
	}
	opt.Base = strings.TrimRight(opt.Base, "/")
	store, err := memory.OpenReadOnly(ctx, opt.DB, opt.Log)
	if err != nil {
		return nil, err
	}
	abs := store.Path()
	db, err := sql.Open("sqlite", memory.ReadOnlyDSN(abs))
	if err != nil {
		store.Close()
		return nil, err
	}
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(2)
	u := &UI{opt: opt, abs: abs, db: db, store: store}
	if u.opt.SnapshotDir != "" {
		if u.opt.SnapshotDir, err = filepath.Abs(u.opt.SnapshotDir); err != nil {
			u.Close()
			return nil, err
		}
	}
	if u.opt.Stem == "" {
		base := filepath.Base(abs)
		u.opt.Stem = strings.TrimSuffix(base, filepath.Ext(base))
	}
	if err := u.parse(); err != nil {
		u.Close()
		return nil, err
	}
	u.routes()
	return u, nil
}

// Close closes the connections.
func (u *UI) Close() error {
	u.stmts.close()
	err := u.db.Close()
	return errors.Join(err, u.store.Close())
}

var funcs = template.FuncMap{
	"short": func(s string, n int) string {
		if len(s) <= n {
			return s
		}
		return s[:n] + "…"
	},
}

func (u *UI) parse() error {
	names, err := fs.Glob(assets, "templates/*.html")
	if err != nil {
		return err
	}
	u.pages = map[string]*template.Template{}
	for _, n := range names {
		base := filepath.Base(n)
		if base == "layout.html" {
			continue
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(assets, "templates/layout.html", n)
		if err != nil {
			return err
		}
		u.pages[strings.TrimSuffix(base, ".html")] = t
	}
	return nil
}

func (u *UI) routes() {
	u.mux = http.NewServeMux()
	u.mux.HandleFunc("GET /{$}", u.timeline)
	u.mux.HandleFunc("GET /chain", u.chain)
	u.mux.HandleFunc("GET /export.jsonl", u.export)
	u.mux.HandleFunc("GET /activity", u.activity)
	u.mux.HandleFunc("GET /snapshots", u.snapshots)
	u.mux.HandleFunc("GET /tables", u.tables)
	static, _ := fs.Sub(assets, "static")
	u.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
}

// The headers of every answer: no script at all, styles and images from
// this server only, no framing, no sniffing, no referrer (the first URL
// holds the secret), nothing cached.
var securityHeaders = [][2]string{
	{"Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"},
	{"X-Frame-Options", "DENY"},
	{"X-Content-Type-Options", "nosniff"},
	{"Referrer-Policy", "no-referrer"},
	{"Cache-Control", "no-store"},
	{"Cross-Origin-Opener-Policy", "same-origin"},
	{"Cross-Origin-Resource-Policy", "same-origin"},
}

// Handler serves the pages. Every request is checked in this order
// (httpguard's pieces): the Host header (one of Options.Hosts, unless
// HostChecked), the Origin header when present (the same origin),
// Sec-Fetch-Site when present (not cross-site), the method (GET or HEAD),
// then the login secret (Options.Login) and Authorized.
func (u *UI) Handler() http.Handler {
	checks := []httpguard.Middleware{httpguard.SetHeaders(securityHeaders...)}
	if !u.opt.HostChecked {
		checks = append(checks, httpguard.Host(u.opt.Hosts, http.StatusMisdirectedRequest, func(string) string {
			return "refused: this Host is not the address the view is served on"
		}))
	}
	checks = append(checks,
		httpguard.Origin(httpguard.SameOrigin, func(string) string { return "refused: a request from another origin" }),
		httpguard.SameSite("refused: a request from another site"),
		httpguard.Methods("refused: the view is read-only (GET and HEAD only)", http.MethodGet, http.MethodHead),
		u.signIn,
	)
	return httpguard.Chain(u.mux, checks...)
}

// signIn trades the login secret for a cookie, and refuses a request
// Authorized does not admit.
func (u *UI) signIn(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u.opt.Login != nil && r.URL.Query().Has(secretParam) {
			u.opt.Login.trade(w, r, u.opt.Base)
			return
		}
		if u.opt.Authorized == nil || !u.opt.Authorized(r) {
			msg := "refused: open the URL the ui command printed (its secret is traded for a cookie on first use)"
			if u.opt.Challenge != "" {
				w.Header().Set("WWW-Authenticate", u.opt.Challenge)
				msg = u.opt.Refusal
			}
			httpguard.Refuse(w, r, http.StatusUnauthorized, msg)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// LoopbackHosts are the Host values a browser sends to a server bound to
// addr (a loopback host:port): the address itself and localhost.
func LoopbackHosts(addr net.Addr) []string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return nil
	}
	return []string{net.JoinHostPort(host, port), net.JoinHostPort("localhost", port)}
}

// CheckLoopback refuses an address that is not a loopback IP or
// localhost: the view has no TLS and trusts whoever holds its cookie.
func CheckLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q is not host:port (for example 127.0.0.1:0)", addr)
	}
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("--addr %q is not a loopback address: the view serves only this machine (use 127.0.0.1:PORT or [::1]:PORT)", addr)
	}
	return nil
}

// secretParam is the query parameter that carries the one-time secret.
const secretParam = "secret"

// Login is the standalone command's authentication: a one-time secret,
// printed in the URL, that the first request trades for a session cookie
// (HttpOnly, SameSite=Strict). Only hashes are kept and compared, in
// constant time.
type Login struct {
	cookie string // the cookie's name: per port, as cookies ignore ports
	mu     sync.Mutex
	secret []byte // sha256 of the unused secret; nil once traded
	// sessions are the sha256 of the cookie values handed out.
	sessions [][]byte
}

// NewLogin makes a login with a fresh secret, returned for the URL. The
// cookie's name carries port, so that two views on one machine do not
// overwrite each other's cookie.
func NewLogin(port string) (*Login, string, error) {
	s, err := randomHex()
	if err != nil {
		return nil, "", err
	}
	h := sha256.Sum256([]byte(s))
	return &Login{cookie: "mcp_sqlite_ui_" + port, secret: h[:]}, s, nil
}

// URL is the address to print: base URL plus the secret.
func (l *Login) URL(base, secret string) string {
	return base + "/?" + secretParam + "=" + url.QueryEscape(secret)
}

func randomHex() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// trade answers a request that carries the secret: the right unused secret
// gets a session cookie and a redirect to the same page without it.
func (l *Login) trade(w http.ResponseWriter, r *http.Request, base string) {
	q := r.URL.Query()
	got := sha256.Sum256([]byte(q.Get(secretParam)))
	l.mu.Lock()
	ok := l.secret != nil && subtle.ConstantTimeCompare(l.secret, got[:]) == 1
	var value string
	if ok {
		var err error
		if value, err = randomHex(); err != nil {
			l.mu.Unlock()
			http.Error(w, "no randomness", http.StatusInternalServerError)
			return
		}
		l.secret = nil // one time only
		h := sha256.Sum256([]byte(value))
		l.sessions = append(l.sessions, h[:])
	}
	l.mu.Unlock()
	if !ok {
		http.Error(w, "refused: this secret is wrong or was used already; start the ui command again for a new URL", http.StatusUnauthorized)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: l.cookie, Value: value, Path: base + "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	q.Del(secretParam)
	to := base + r.URL.Path
	if len(q) > 0 {
		to += "?" + q.Encode()
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// Authorized reports whether r carries a cookie this login handed out.
func (l *Login) Authorized(r *http.Request) bool {
	c, err := r.Cookie(l.cookie)
	if err != nil {
		return false
	}
	h := sha256.Sum256([]byte(c.Value))
	l.mu.Lock()
	defer l.mu.Unlock()
	found := 0
	for _, s := range l.sessions {
		found |= subtle.ConstantTimeCompare(s, h[:])
	}
	return found == 1
}

// Path is the database's absolute path.
func (u *UI) Path() string { return u.abs }
