package ui

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/audit"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/memory"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/portable"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite/sqlitetest"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/snapshot"
)

const testHost = "127.0.0.1:8765"

// payload is agent text that would run if a page did not escape it.
const payload = `<script>document.title="pwned"</script></title><img src=x onerror="document.body.append(document.createElement('hr'))"><a href="javascript:alert(1)">x</a>`

// fixture builds a memory database with events of two agents, a
// checkpoint, audit rows (ok, failed, refused, destructive), an agent
// table, a view with a description and an FTS table, and a full snapshot
// with its audit row. Every connection is closed when it returns, so the
// file can be hashed.
func fixture(t *testing.T, events int) (db, snapDir string) {
	t.Helper()
	dir := t.TempDir()
	db = filepath.Join(dir, "mem.db")
	ctx := context.Background()
	s, err := memory.Open(ctx, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= events; i++ {
		session, kind := "20260101T000000Z-beef", "note"
		switch {
		case i%3 == 0:
			session = "20260101T000000Z-cafe@alice"
		case i%5 == 0:
			kind = "decision"
		}
		content := fmt.Sprintf("event %d about orders", i)
		if i == 2 {
			content = "the login cookie was wrong " + payload
		}
		if _, err := s.Append(ctx, session, kind, content); err != nil {
			t.Fatal(err)
		}
		if i == 4 {
			if _, err := s.Checkpoint(ctx, "20260101T000000Z-beef", "first part done"); err != nil {
				t.Fatal(err)
			}
		}
	}
	snapDir = filepath.Join(dir, "mem.snapshots")
	if err := os.MkdirAll(snapDir, 0o755); err != nil {
		t.Fatal(err)
	}
	taken := time.Now().UTC()
	snap := filepath.Join(snapDir, snapshot.FileName("mem", "", taken))
	now := taken.Add(-time.Second)
	queue := audit.ForStore(s)
	for _, e := range []audit.Entry{
		{TS: now, Session: "20260101T000000Z-beef", Tool: "read_query", Query: sql.NullString{String: "SELECT 1", Valid: true}, OK: true, Rows: sql.NullInt64{Int64: 1, Valid: true}, Duration: 3 * time.Millisecond},
		{TS: now, Session: "20260101T000000Z-beef", Tool: "write_query", Query: sql.NullString{String: "DROP TABLE t " + payload, Valid: true}, Error: "READ_ONLY_VIOLATION: DROP TABLE is not allowed in write_query; use destructive_query", Duration: 5 * time.Millisecond},
		{TS: now, Session: "20260101T000000Z-cafe@alice", Tool: "read_query", Query: sql.NullString{String: "SELECT * FROM nope", Valid: true}, Error: "SQL_ERROR: no such table: nope", Duration: 2 * time.Millisecond},
		{TS: now, Session: "20260101T000000Z-cafe@alice", Tool: "destructive_query", Query: sql.NullString{String: "DELETE FROM notes WHERE id = 1", Valid: true}, OK: true, Rows: sql.NullInt64{Int64: 1, Valid: true}, Duration: 40 * time.Millisecond,
			Detail: map[string]any{"reason": "drop the stale note", "snapshot": snap}},
	} {
		if err := queue.Audit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := queue.FlushAudit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite", "file:"+db+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT)`,
		`INSERT INTO notes(body) VALUES ('a'), ('b'), ('c')`,
		"CREATE VIEW \"recent\" AS\n-- description: the newest notes " + payload + "\nSELECT * FROM notes ORDER BY id DESC",
		`CREATE VIRTUAL TABLE docs USING fts5(body)`,
		`INSERT INTO docs(body) VALUES ('x')`,
		`VACUUM INTO '` + snap + `'`,
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatal(q, err)
		}
	}
	raw.Close()
	return db, snapDir
}

func newUI(t *testing.T, db, snapDir string) *UI {
	t.Helper()
	u, err := New(context.Background(), Options{DB: db, SnapshotDir: snapDir, Stem: "mem", Hosts: []string{testHost},
		Authorized: func(*http.Request) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	return u
}

func get(t *testing.T, h http.Handler, target string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, "http://"+testHost+target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			r.Host = header[i+1]
		} else {
			r.Header.Set(header[i], header[i+1])
		}
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// rowIDs are the ids of a page's table rows, in page order.
func rowIDs(body string) []string {
	var ids []string
	for _, m := range regexp.MustCompile(`<td class="num">((?:cp )?\d+)</td>`).FindAllStringSubmatch(body, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

func TestPages(t *testing.T) {
	db, snapDir := fixture(t, 60)
	before := sqlitetest.FileDigest(t, db)
	u := newUI(t, db, snapDir)
	h := u.Handler()
	tests := []struct {
		name, target string
		status       int
		want, not    []string
		firstIDs     []string
	}{
		{name: "timeline newest first with the checkpoint above its event", target: "/", status: 200,
			want: []string{"event 60 about orders", "older →", `before=11`}, not: []string{"event 10 about", "first part done"},
			firstIDs: []string{"60", "59", "58"}},
		{name: "timeline second page", target: "/?before=11", status: 200, want: []string{"event 10 about orders", "cp 1", "event 1 about"},
			not: []string{"event 11 about", "older →"}},
		{name: "kind filter", target: "/?kind=decision", status: 200, want: []string{"event 55 about", "event 5 about"}, not: []string{"event 60 about", "cp 1"}},
		{name: "kind checkpoint", target: "/?kind=checkpoint", status: 200, want: []string{"cp 1", "first part done"}, not: []string{"event 60 about"}},
		{name: "agent filter", target: "/?agent=alice", status: 200, want: []string{"event 60 about", "<b>alice</b>"}, not: []string{"event 59 about"}},
		{name: "local agent", target: "/?agent=(local)", status: 200, want: []string{"event 59 about"}, not: []string{"event 60 about"}},
		{name: "date range outside", target: "/?from=2000-01-01&to=2000-01-02", status: 200, want: []string{"nothing to show"}},
		{name: "date range inside", target: "/?from=2000-01-01", status: 200, want: []string{"event 60 about"}},
		{name: "bad date", target: "/?from=yesterday", status: 400, want: []string{"from is not a date"}},
		{name: "bad keyset", target: "/?before=-3", status: 400, want: []string{"before is not an event id"}},
		{name: "search ranks the match", target: "/?q=login+cookie", status: 200, want: []string{"the login cookie was wrong", "bm25"}, not: []string{"event 60 about"}},
		{name: "search with a filter", target: "/?q=orders&agent=alice", status: 200, want: []string{"event 60 about"}, not: []string{"event 59 about"}},
		{name: "search of nothing", target: "/?q=%22%22", status: 200, want: []string{"no words to look for"}},
		{name: "payload escaped", target: "/?q=login", status: 200, want: []string{"&lt;script&gt;document.title=", "&lt;/title&gt;&lt;img src=x onerror="}, not: []string{"<script>", "<img src=x"}},
		{name: "chain", target: "/chain", status: 200, want: []string{"Verified: all 60 events", "head id</dt><dd>60<", "/export.jsonl"}},
		{name: "activity", target: "/activity", status: 200, want: []string{`class="refused"`, "READ_ONLY_VIOLATION", "SQL_ERROR", "<svg", "p50", "DROP TABLE t &lt;script&gt;"}, not: []string{"<script>"}},
		{name: "activity errors only", target: "/activity?errors=1", status: 200, want: []string{"SQL_ERROR", "READ_ONLY_VIOLATION"}, not: []string{"SELECT 1<"}},
		{name: "activity one tool", target: "/activity?tool=read_query", status: 200, want: []string{"SELECT 1", "SQL_ERROR"}, not: []string{"READ_ONLY_VIOLATION", "DELETE FROM notes"}},
		{name: "activity destructive", target: "/activity?destructive=1", status: 200, want: []string{"DELETE FROM notes"}, not: []string{"SELECT 1<", "SQL_ERROR"}},
		{name: "activity one agent", target: "/activity?agent=alice", status: 200, want: []string{"SQL_ERROR", "DELETE FROM notes"}, not: []string{"READ_ONLY_VIOLATION", "SELECT 1<"}},
		{name: "snapshots", target: "/snapshots", status: 200, want: []string{"full copy", "by destructive_query", "drop the stale note", "mcp-sqlite-memory restore --db " + u.abs + " " + snapDir}},
		{name: "tables", target: "/tables", status: 200, want: []string{"<td>notes</td>", "<td class=\"num\">3</td>", "<td>recent</td>", "the newest notes &lt;script&gt;", "virtual table"},
			not: []string{"memory_events", "query_log", "docs_data", "<script>"}},
		{name: "not found", target: "/nope", status: 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := get(t, h, tt.target)
			body := w.Body.String()
			if w.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.status, body)
			}
			for _, s := range tt.want {
				if !strings.Contains(body, s) {
					t.Errorf("page lacks %q", s)
				}
			}
			for _, s := range tt.not {
				if strings.Contains(body, s) {
					t.Errorf("page holds %q", s)
				}
			}
			if tt.firstIDs != nil {
				if ids := rowIDs(body); len(ids) < len(tt.firstIDs) || strings.Join(ids[:len(tt.firstIDs)], ",") != strings.Join(tt.firstIDs, ",") {
					t.Errorf("rows %v, want them to start %v", ids, tt.firstIDs)
				}
			}
			if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
				t.Errorf("CSP %q", csp)
			}
		})
	}
	u.Close()
	if sqlitetest.FileDigest(t, db) != before {
		t.Fatal("the pages changed the database file")
	}
}

func TestCheckpointOrder(t *testing.T) {
	db, snapDir := fixture(t, 6)
	body := get(t, newUI(t, db, snapDir).Handler(), "/").Body.String()
	if got := strings.Join(rowIDs(body), ","); got != "6,5,cp 1,4,3,2,1" {
		t.Fatalf("timeline order %s", got)
	}
}

func TestExportIsTheExport(t *testing.T) {
	db, snapDir := fixture(t, 12)
	s, err := memory.OpenExisting(context.Background(), db, nil)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if _, err := portable.Export(context.Background(), s, &want, nil); err != nil {
		t.Fatal(err)
	}
	s.Close()
	w := get(t, newUI(t, db, snapDir).Handler(), "/export.jsonl")
	if w.Code != 200 || !bytes.Equal(w.Body.Bytes(), want.Bytes()) || !strings.Contains(w.Header().Get("Content-Disposition"), `filename="mem.jsonl"`) {
		t.Fatalf("export: status %d, %d bytes (want %d), %q", w.Code, w.Body.Len(), want.Len(), w.Header().Get("Content-Disposition"))
	}
}

func TestBrokenChain(t *testing.T) {
	db, snapDir := fixture(t, 8)
	raw, err := sql.Open("sqlite", "file:"+db)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`DROP TRIGGER memory_events_no_update`, `UPDATE memory_events SET content = 'rewritten' WHERE id = 5`} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	raw.Close()
	body := get(t, newUI(t, db, snapDir).Handler(), "/chain").Body.String()
	for _, s := range []string{"Broken at event 5", "stored hash does not match", "Events 1 to 4 are as the server wrote them", "head id</dt><dd>4<"} {
		if !strings.Contains(body, s) {
			t.Errorf("chain page lacks %q", s)
		}
	}
}

func TestGuard(t *testing.T) {
	db, snapDir := fixture(t, 3)
	login, secret, err := NewLogin("8765")
	if err != nil {
		t.Fatal(err)
	}
	u, err := New(context.Background(), Options{DB: db, SnapshotDir: snapDir, Hosts: []string{testHost, "localhost:8765"}, Authorized: login.Authorized, Login: login})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	h := u.Handler()

	// The secret buys one cookie, once.
	w := get(t, h, "/activity?secret="+secret+"&errors=1")
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/activity?errors=1" {
		t.Fatalf("trade: %d %q", w.Code, w.Header().Get("Location"))
	}
	cookies := w.Result().Cookies()
	if len(cookies) != 1 || !cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteStrictMode || cookies[0].Value == secret {
		t.Fatalf("cookie %+v", cookies)
	}
	cookie := cookies[0].Name + "=" + cookies[0].Value
	if w := get(t, h, "/?secret="+secret); w.Code != http.StatusUnauthorized {
		t.Fatalf("second use of the secret: %d", w.Code)
	}

	post := func(method string) int {
		r := httptest.NewRequest(method, "http://"+testHost+"/", strings.NewReader("x"))
		r.Header.Set("Cookie", cookie)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	tests := []struct {
		name   string
		header []string
		status int
	}{
		{"with the cookie", []string{"Cookie", cookie}, 200},
		{"localhost name", []string{"Cookie", cookie, "Host", "localhost:8765"}, 200},
		{"same origin", []string{"Cookie", cookie, "Origin", "http://" + testHost}, 200},
		{"no cookie", nil, 401},
		{"a forged cookie", []string{"Cookie", cookies[0].Name + "=" + strings.Repeat("0", 64)}, 401},
		{"the secret as cookie", []string{"Cookie", cookies[0].Name + "=" + secret}, 401},
		{"bad host", []string{"Cookie", cookie, "Host", "evil.example:8765"}, 421},
		{"other port", []string{"Cookie", cookie, "Host", "127.0.0.1:9999"}, 421},
		{"other origin", []string{"Cookie", cookie, "Origin", "http://evil.example"}, 403},
		{"null origin", []string{"Cookie", cookie, "Origin", "null"}, 403},
		{"cross-site fetch", []string{"Cookie", cookie, "Sec-Fetch-Site", "cross-site"}, 403},
		{"bad host before the secret", []string{"Host", "evil.example"}, 421},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := get(t, h, "/", tt.header...)
			if w.Code != tt.status {
				t.Fatalf("status %d, want %d", w.Code, tt.status)
			}
			if w.Header().Get("X-Frame-Options") != "DENY" || w.Header().Get("X-Content-Type-Options") != "nosniff" {
				t.Fatalf("headers %v", w.Header())
			}
		})
	}
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch} {
		if code := post(m); code != http.StatusMethodNotAllowed {
			t.Errorf("%s: %d", m, code)
		}
	}
	r := httptest.NewRequest(http.MethodHead, "http://"+testHost+"/chain", nil)
	r.Header.Set("Cookie", cookie)
	hw := httptest.NewRecorder()
	h.ServeHTTP(hw, r)
	if hw.Code != 200 {
		t.Errorf("HEAD: %d", hw.Code)
	}
	// The stylesheet is served from the binary.
	if w := get(t, h, "/static/style.css", "Cookie", cookie); w.Code != 200 || !strings.Contains(w.Header().Get("Content-Type"), "text/css") {
		t.Errorf("style.css: %d %q", w.Code, w.Header().Get("Content-Type"))
	}
}

func TestNilAuthorizedRefuses(t *testing.T) {
	db, snapDir := fixture(t, 1)
	u, err := New(context.Background(), Options{DB: db, SnapshotDir: snapDir, Hosts: []string{testHost}})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	if w := get(t, u.Handler(), "/"); w.Code != http.StatusUnauthorized {
		t.Fatalf("status %d", w.Code)
	}
}

func TestMountedUnderBase(t *testing.T) {
	db, snapDir := fixture(t, 3)
	u, err := New(context.Background(), Options{DB: db, SnapshotDir: snapDir, Base: "/ui/", Hosts: []string{testHost},
		Authorized: func(*http.Request) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	mux := http.NewServeMux()
	mux.Handle("/ui/", http.StripPrefix("/ui", u.Handler()))
	w := get(t, mux, "/ui/chain")
	body, _ := io.ReadAll(w.Body)
	if w.Code != 200 || !strings.Contains(string(body), `href="/ui/static/style.css"`) || !strings.Contains(string(body), `href="/ui/activity"`) {
		t.Fatalf("mounted: %d %s", w.Code, body)
	}
}

func TestCheckLoopback(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:0": true, "127.0.0.2:80": true, "[::1]:0": true, "localhost:8080": true,
		"0.0.0.0:0": false, "[::]:0": false, "192.168.1.2:80": false, ":8080": false, "example.com:80": false, "nonsense": false,
	} {
		if err := CheckLoopback(addr); (err == nil) != ok {
			t.Errorf("CheckLoopback(%q) = %v", addr, err)
		}
	}
}

func TestNotAMemory(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "t.db")
	if err := os.WriteFile(text, []byte("not a database at all, just some text of enough length to be read"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(dir, "missing.db"), text} {
		if _, err := New(context.Background(), Options{DB: path}); err == nil {
			t.Errorf("%s: opened", path)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "missing.db")); !os.IsNotExist(err) {
		t.Error("New created the missing file")
	}
}

func TestPercentileAndCodes(t *testing.T) {
	if p := percentile([]int64{5, 1, 3, 2, 4}, 50); p != 3 {
		t.Errorf("p50 %d", p)
	}
	if p := percentile([]int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 100}, 95); p != 100 {
		t.Errorf("p95 %d", p)
	}
	for text, code := range map[string]string{"SQL_ERROR: x": "SQL_ERROR", "no code: x": "", "READ_ONLY_VIOLATION: a: b": "READ_ONLY_VIOLATION", "": ""} {
		if got := codeOf(text); got != code {
			t.Errorf("codeOf(%q) = %q", text, got)
		}
	}
	for s, want := range map[string]string{"/a/b.db": "/a/b.db", "/a b/c.db": "'/a b/c.db'", "it's": `'it'\''s'`} {
		if got := shellQuote(s); got != want {
			t.Errorf("shellQuote(%q) = %q", s, got)
		}
	}
}
