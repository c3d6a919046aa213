package tests

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// httpServer is one server started with --http, and its agents' tokens.
type httpServer struct {
	t      testing.TB
	db     string
	url    string // http://127.0.0.1:PORT/mcp
	addr   string // 127.0.0.1:PORT
	tokens string // the token file
	token  map[string]string
	listen string // --http's address; "" is 127.0.0.1:0
	// memory is the flags naming the memory; nil: --db db. A cluster
	// front's are --rqlite and --rqlite-data.
	memory []string
	cmd    *exec.Cmd
	log    *lockedBuffer
	done   chan struct{} // closed when the process has exited
}

// addToken runs `token add` and returns the token, its last stdout line.
func addToken(t testing.TB, file, agent string) string {
	t.Helper()
	out, err := exec.Command(serverBin, "token", "add", agent, "--auth-tokens", file).Output()
	if err != nil {
		t.Fatalf("token add %s: %v", agent, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

var servingURL = regexp.MustCompile(`serving MCP over Streamable HTTP: url=(\S+)`)

// startHTTP makes a token for each agent and starts the server on db
// with --http on a free loopback port.
func startHTTP(t testing.TB, db string, agents []string, flags ...string) *httpServer {
	t.Helper()
	h := &httpServer{t: t, db: db, tokens: filepath.Join(filepath.Dir(db), "tokens"), token: map[string]string{}}
	for _, a := range agents {
		h.token[a] = addToken(t, h.tokens, a)
	}
	h.start(flags...)
	return h
}

// start (re)starts the server process on h's file and tokens.
func (h *httpServer) start(flags ...string) {
	t := h.t
	t.Helper()
	listen := h.listen
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	args := append([]string(nil), h.memory...)
	if args == nil && h.db != "" { // "": cluster mode, where the flags name the cluster
		args = []string{"--db", h.db}
	}
	args = append(args, "--http", listen)
	if h.tokens != "" {
		args = append(args, "--auth-tokens", h.tokens)
	}
	args = append(args, flags...)
	h.cmd = exec.Command(serverBin, args...)
	h.log = &lockedBuffer{}
	pr, pw := io.Pipe()
	h.cmd.Stderr = pw
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	serverStarted(h.db, h.cmd)
	h.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) {
		_ = cmd.Wait()
		pw.Close()
		close(done)
	}(h.cmd, h.done)
	found := make(chan string, 1)
	go func(log *lockedBuffer) {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			fmt.Fprintln(log, sc.Text())
			if m := servingURL.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}(h.log)
	select {
	case h.url = <-found:
	case <-h.done:
		t.Fatalf("the HTTP server exited at start:\n%s", h.log.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("the HTTP server did not start:\n%s", h.log.String())
	}
	_, h.addr, _ = strings.Cut(strings.TrimSuffix(h.url, "/mcp"), "://")
	cmd, done := h.cmd, h.done
	t.Cleanup(func() { stopProcess(cmd, done) })
}

// stopProcess sends SIGTERM (a kill on Windows) and waits for the exit.
func stopProcess(cmd *exec.Cmd, done chan struct{}) {
	select {
	case <-done:
		return
	default:
	}
	if runtime.GOOS == "windows" {
		_ = cmd.Process.Kill()
	} else {
		_ = cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// connect opens an MCP client of agent: modern speaks 2026-07-28
// (stateless, server/discover), else 2025-11-25 with a session.
func (h *httpServer) connect(t testing.TB, agent string, modern bool, opts ...client.ClientOption) *session {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(h.url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + h.token[agent]}))
	if err != nil {
		t.Fatal(err)
	}
	version := mcp.ProtocolVersion20251125
	if modern {
		version = mcp.ProtocolVersion20260728
	}
	c := client.NewClient(tr, append([]client.ClientOption{client.WithProtocolVersion(version), client.WithDiscoverTimeout(30 * time.Second)}, opts...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Start(context.Background()); err != nil {
		t.Fatalf("start client: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = version
	init.Params.ClientInfo = mcp.Implementation{Name: "e2e-http-" + agent, Version: "1"}
	res, err := c.Initialize(ctx, init)
	if err != nil {
		t.Fatalf("initialize over HTTP: %v\n%s", err, tail(h.log.String(), 4000))
	}
	if res.ProtocolVersion != version {
		t.Fatalf("negotiated %s, want %s", res.ProtocolVersion, version)
	}
	s := &session{t: t, c: c, db: h.db, cmd: h.cmd}
	s.guardLocks()
	s.markAuditBase()
	return s
}

// generations runs f for each protocol generation.
func generations(t *testing.T, f func(t *testing.T, modern bool)) {
	for _, g := range []struct {
		name   string
		modern bool
	}{{"2025-11-25", false}, {"2026-07-28", true}} {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			f(t, g.modern)
		})
	}
}

// TestHTTPAllTools runs all 14 tools over HTTP, in both protocol
// generations, and finds the agent in the audit rows and the chain.
func TestHTTPAllTools(t *testing.T) {
	t.Parallel()
	generations(t, func(t *testing.T, modern bool) {
		db := newDB(t)
		h := startHTTP(t, db, []string{"alice"})
		s := h.connect(t, "alice", modern)
		tools, err := s.c.ListTools(context.Background(), mcp.ListToolsRequest{})
		if err != nil || len(tools.Tools) != 14 {
			t.Fatalf("tools/list: %d tools, %v", len(tools.Tools), err)
		}
		s.ok("write_query", q("CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT)"))
		if got := s.ok("write_query", q("INSERT INTO notes(body) VALUES ('alpha'), ('beta'), ('gamma')")); !strings.HasPrefix(got, "ok: 3 rows affected") {
			t.Fatalf("insert: %s", got)
		}
		if got := s.ok("read_query", q("SELECT body FROM notes ORDER BY id")); got != "body\nalpha\nbeta\ngamma\n# 3 rows" {
			t.Fatalf("read_query: %q", got)
		}
		s.fails("read_query", q("DROP TABLE notes"), "READ_ONLY_VIOLATION")
		if got := s.ok("list_tables", nil); !strings.Contains(got, "notes,table,0,3") {
			t.Fatalf("list_tables: %s", got)
		}
		if got := s.ok("describe_table", map[string]any{"table": "notes"}); !strings.Contains(got, "body") {
			t.Fatalf("describe_table: %s", got)
		}
		s.ok("create_view", map[string]any{"name": "b_notes", "select_sql": "SELECT * FROM notes WHERE body LIKE 'b%'", "description": "notes starting with b"})
		if got := s.ok("get_schema", nil); !strings.Contains(got, "notes starting with b") {
			t.Fatalf("get_schema: %s", got)
		}
		if got := s.ok("search_text", map[string]any{"pattern": "amm", "table": "notes"}); !strings.Contains(got, "gamma") {
			t.Fatalf("search_text: %s", got)
		}
		if got := s.ok("destructive_query", map[string]any{"query": "DELETE FROM notes WHERE body = 'beta'", "reason": "beta is obsolete"}); !strings.Contains(got, "1 rows affected") {
			t.Fatalf("destructive_query: %s", got)
		}
		if got := s.ok("snapshot", map[string]any{"reason": "before the checkpoint"}); !strings.HasPrefix(got, "ok: snapshot") {
			t.Fatalf("snapshot: %s", got)
		}
		if got := s.ok("append_event", map[string]any{"content": "HTTP works", "kind": "decision"}); !strings.HasPrefix(got, "ok: event 1 appended") {
			t.Fatalf("append_event: %s", got)
		}
		if got := s.ok("checkpoint", map[string]any{"summary": "over HTTP"}); !strings.HasPrefix(got, "ok: checkpoint 1 written at event 1") {
			t.Fatalf("checkpoint: %s", got)
		}
		s.ok("append_event", map[string]any{"content": "after the checkpoint"})
		if got := s.ok("verify_chain", nil); !strings.Contains(got, `"ok": true`) && !strings.Contains(got, `"ok":true`) {
			t.Fatalf("verify_chain: %s", got)
		}
		if got := s.ok("get_resume_context", nil); !strings.Contains(got, "over HTTP") || !strings.Contains(got, "id,ts,kind,content,agent\n") || !strings.Contains(got, ",note,after the checkpoint,alice") {
			t.Fatalf("get_resume_context: %s", got)
		}
		s.audited(db)
		d := openDirect(t, db)
		var n int
		if err := d.QueryRow(`SELECT count(*) FROM query_log WHERE session LIKE '%@alice' AND json_extract(detail, '$.agent') = 'alice'`).Scan(&n); err != nil || int64(n) != s.calls.Load() {
			t.Fatalf("%d of %d audit rows name alice (%v)", n, s.calls.Load(), err)
		}
		if err := d.QueryRow(`SELECT count(*) FROM memory_events WHERE session LIKE '%@alice'`).Scan(&n); err != nil || n != 2 {
			t.Fatalf("%d events of alice, want 2 (%v)", n, err)
		}
		if err := d.QueryRow(`SELECT count(*) FROM memory_checkpoints WHERE session LIKE '%@alice'`).Scan(&n); err != nil || n != 1 {
			t.Fatalf("%d checkpoints of alice, want 1 (%v)", n, err)
		}
	})
}

// rawRequest sends one HTTP request to h and returns the status, the
// WWW-Authenticate header and the body.
func (h *httpServer) rawRequest(t testing.TB, method, path string, header map[string]string, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+h.addr+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// TestHTTPRefusals: each thing the front door turns away, and what
// passes. One server; the requests are independent.
func TestHTTPRefusals(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	h := startHTTP(t, db, []string{"alice", "bob"}, "--allowed-origins", "https://ide.example.com", "--max-body-mb", "1")
	alice := map[string]string{"Authorization": "Bearer " + h.token["alice"]}
	with := func(m map[string]string, k, v string) map[string]string {
		out := map[string]string{k: v}
		for a, b := range m {
			if a != k {
				out[a] = b
			}
		}
		return out
	}
	cases := []struct {
		name   string
		path   string
		header map[string]string
		body   string
		status int
		want   string
	}{
		{"healthz needs no token", "/healthz", nil, "", 200, "ok"},
		{"no token", "/mcp", nil, initializeBody, 401, "a valid token is required"},
		{"wrong token", "/mcp", map[string]string{"Authorization": "Bearer msm_wrong"}, initializeBody, 401, "a valid token is required"},
		{"not bearer", "/mcp", map[string]string{"Authorization": "Basic " + h.token["alice"]}, initializeBody, 401, ""},
		{"token in the query string", "/mcp?access_token=" + h.token["alice"], nil, initializeBody, 400, "a token in the URL is refused"},
		{"token in any parameter", "/mcp?x=" + h.token["alice"], alice, initializeBody, 400, "a token in the URL is refused"},
		{"bad Origin", "/mcp", with(alice, "Origin", "https://evil.example.com"), initializeBody, 403, "Origin"},
		{"bad Host", "/mcp", with(alice, "Host", "rebound.example.com"), initializeBody, 403, "Host"},
		{"oversized body", "/mcp", alice, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 1<<20) + `"}}`, 413, "--max-body-mb"},
		{"allowed Origin", "/mcp", with(alice, "Origin", "https://ide.example.com"), initializeBody, 200, "mcp-sqlite-memory"},
		{"localhost Host", "/mcp", with(alice, "Host", "localhost"), initializeBody, 200, "mcp-sqlite-memory"},
		{"no Origin, good token", "/mcp", alice, initializeBody, 200, "mcp-sqlite-memory"},
		{"unknown path", "/other", alice, "", 404, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, hdr, body := h.rawRequest(t, http.MethodPost, c.path, c.header, c.body)
			if c.path == "/healthz" {
				status, hdr, body = h.rawRequest(t, http.MethodGet, c.path, c.header, "")
				if body != "ok" {
					t.Fatalf("healthz said %q, want exactly ok", body)
				}
			}
			if status != c.status || !strings.Contains(body, c.want) {
				t.Fatalf("status %d, body %q; want %d with %q", status, bounded(body), c.status, c.want)
			}
			if status == 401 && !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Bearer") {
				t.Fatalf("401 without WWW-Authenticate: Bearer: %v", hdr)
			}
		})
	}
	t.Run("session of another agent", func(t *testing.T) {
		status, hdr, _ := h.rawRequest(t, http.MethodPost, "/mcp", alice, initializeBody)
		id := hdr.Get("Mcp-Session-Id")
		if status != 200 || id == "" {
			t.Fatalf("initialize: %d, session %q", status, id)
		}
		ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
		bob := map[string]string{"Authorization": "Bearer " + h.token["bob"], "Mcp-Session-Id": id, "MCP-Protocol-Version": "2025-11-25"}
		if status, _, body := h.rawRequest(t, http.MethodPost, "/mcp", bob, ping); status != 404 {
			t.Fatalf("bob on alice's session: %d %s", status, body)
		}
		if status, _, body := h.rawRequest(t, http.MethodPost, "/mcp", with(bob, "Authorization", alice["Authorization"]), ping); status != 200 {
			t.Fatalf("alice on her session: %d %s", status, body)
		}
	})
}

// TestHTTPRevokedToken: a token revoked while the server runs stops
// working at its next request; the other agent's goes on.
func TestHTTPRevokedToken(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	h := startHTTP(t, db, []string{"alice", "bob"})
	a := h.connect(t, "alice", true)
	b := h.connect(t, "bob", false)
	a.ok("read_query", q("SELECT 1"))
	if out, err := exec.Command(serverBin, "token", "revoke", "alice", "--auth-tokens", h.tokens).CombinedOutput(); err != nil {
		t.Fatalf("token revoke: %v %s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = "read_query"
	req.Params.Arguments = q("SELECT 1")
	if _, err := a.c.CallTool(ctx, req); err == nil || !strings.Contains(err.Error(), "authorization required") {
		t.Fatalf("call with the revoked token: %v", err)
	}
	b.ok("read_query", q("SELECT 1"))
	list, _ := exec.Command(serverBin, "token", "list", "--auth-tokens", h.tokens).Output()
	if strings.Contains(string(list), "alice") || !strings.Contains(string(list), "bob") {
		t.Fatalf("token list after revoke:\n%s", list)
	}
}

// TestHTTPStartRefusals: the server does not start without a token file,
// or with one others may read or write.
func TestHTTPStartRefusals(t *testing.T) {
	t.Parallel()
	dir := testDir(t)
	db := filepath.Join(dir, "memory.db")
	tokens := filepath.Join(dir, "tokens")
	addToken(t, tokens, "alice")
	if fi, err := os.Stat(tokens); err != nil || runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode: %v %v", fi.Mode(), err)
	}
	run := func(args ...string) (int, string) {
		cmd := exec.Command(serverBin, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return code, stderr.String()
	}
	if code, msg := run("--db", db, "--http", "127.0.0.1:0"); code != 2 || !strings.Contains(msg, "token add NAME --auth-tokens FILE") {
		t.Fatalf("--http without --auth-tokens: exit %d, %s", code, msg)
	}
	if code, msg := run("--db", db, "--http", "127.0.0.1:0", "--oauth-issuer", "https://as.example.com"); code != 2 || !strings.Contains(msg, "--oauth-issuer needs --resource URL") {
		t.Fatalf("--oauth-issuer without --resource: exit %d, %s", code, msg)
	}
	if code, msg := run("--db", db, "--http", "127.0.0.1:0", "--oauth-issuer", "https://as.example.com", "--resource", "https://m.example.com/mcp", "--oauth-introspection-secret", filepath.Join(dir, "none")); code != 2 || !strings.Contains(msg, "--oauth-introspection-secret") {
		t.Fatalf("a missing introspection secret: exit %d, %s", code, msg)
	}
	if runtime.GOOS != "windows" {
		secret := filepath.Join(dir, "introspection")
		if err := os.WriteFile(secret, []byte("memory:s3cret\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if code, msg := run("--db", db, "--http", "127.0.0.1:0", "--oauth-issuer", "https://as.example.com", "--resource", "https://m.example.com/mcp", "--oauth-introspection-secret", secret); code != 2 || !strings.Contains(msg, "--oauth-introspection-secret") || !strings.Contains(msg, "chmod") {
			t.Fatalf("an introspection secret others may read: exit %d, %s", code, msg)
		}
	}
	if code, msg := run("--db", db, "--http", "0.0.0.0:0", "--auth-tokens", tokens); code != 2 || !strings.Contains(msg, "--allowed-hosts") {
		t.Fatalf("--http 0.0.0.0 without --allowed-hosts: exit %d, %s", code, msg)
	}
	if code, msg := run("--db", db, "--http", "127.0.0.1:0", "--auth-tokens", tokens, "--tls-cert", tokens, "--tls-key", tokens); code != 2 || !strings.Contains(msg, "--tls-cert") {
		t.Fatalf("a token file as the certificate: exit %d, %s", code, msg)
	}
	if runtime.GOOS != "windows" {
		for _, mode := range []os.FileMode{0o640, 0o604, 0o620} {
			if err := os.Chmod(tokens, mode); err != nil {
				t.Fatal(err)
			}
			if code, msg := run("--db", db, "--http", "127.0.0.1:0", "--auth-tokens", tokens); code != 2 || !strings.Contains(msg, "chmod 600") {
				t.Fatalf("token file mode %o: exit %d, %s", mode, code, msg)
			}
		}
	}
	if _, err := os.Stat(db); err == nil {
		t.Fatal("a refused start created the database")
	}
}

// authenticatedConn dials h and sends one request with agent's token on
// a keep-alive connection, which the server then counts as an agent's.
func (h *httpServer) authenticatedConn(t *testing.T, agent string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "GET /other HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", h.addr, h.token[agent])
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("an authenticated request: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("an authenticated request for /other: %d", resp.StatusCode)
	}
	_ = c.SetReadDeadline(time.Time{})
	return c
}

// closedUnserved tells a connection the server closed without an answer.
func closedUnserved(t *testing.T, c net.Conn) bool {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := c.Read(make([]byte, 64))
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the connection was left open")
	}
	return n == 0 && err != nil
}

// TestHTTPSlowClients: a client that never finishes its headers is cut
// off after --header-timeout; when every one of --max-connections is an
// agent's, a new connection is closed at once; a connection that has not
// authenticated is closed to make room for a new one.
func TestHTTPSlowClients(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	h := startHTTP(t, db, []string{"alice"}, "--header-timeout", "3", "--max-connections", "4")
	slow, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	fmt.Fprintf(slow, "POST /mcp HTTP/1.1\r\nHost: %s\r\nX-Slow: ", h.addr)
	_ = slow.SetReadDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	_, err = io.ReadAll(slow)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("a client that never finished its headers was still connected after %s", time.Since(start))
	}

	var agents []net.Conn
	for range 4 {
		agents = append(agents, h.authenticatedConn(t, "alice"))
	}
	// Every slot is an agent's: a fifth connection is closed unserved.
	fifth, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer fifth.Close()
	fmt.Fprintf(fifth, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", h.addr)
	if !closedUnserved(t, fifth) {
		t.Fatal("the connection beyond --max-connections was served")
	}
	// A slot is free; a connection that says nothing takes it, and is
	// closed to make room for the next.
	agents[0].Close()
	idle := make(chan net.Conn, 1)
	if !waitFor(10*time.Second, func() bool {
		c, err := net.Dial("tcp", h.addr)
		if err != nil {
			return false
		}
		_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				idle <- c // still open: it holds the free slot
				return true
			}
		}
		c.Close()
		return false
	}) {
		t.Fatal("the freed slot was not given to a new connection")
	}
	silent := <-idle
	defer silent.Close()
	resp, err := http.Get("http://" + h.addr + "/healthz")
	if err != nil {
		t.Fatalf("a new connection beside a silent one: %v", err)
	}
	resp.Body.Close()
	if !closedUnserved(t, silent) {
		t.Fatal("the silent connection was answered")
	}
}
