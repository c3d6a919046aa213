package ui

import (
	"context"
	"database/sql"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/memory"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

// benchEvents is the size of the benchmarks' memory: 1,000,000 events, or
// MCP_SQLITE_BENCH_EVENTS (as memory's benchmarks; .ci/run sets it low).
func benchEvents() int {
	if n, err := strconv.Atoi(os.Getenv("MCP_SQLITE_BENCH_EVENTS")); err == nil && n > 0 {
		return n
	}
	return 1_000_000
}

var (
	benchDir  string // removed by TestMain
	benchOnce sync.Once
	benchPath string
	benchErr  error
)

// benchFixture builds, once per run, a memory of n events (one checkpoint
// per 1,000), its full-text index, and an audit log of n/10 calls one
// every 30 s, one in 20 failed. Rows are made by recursive CTEs; hashes
// are unique placeholders (these pages do not verify the chain).
func benchFixture(b *testing.B) string {
	benchOnce.Do(func() {
		if p := os.Getenv("MCP_SQLITE_UI_BENCH_DB"); p != "" {
			benchPath = p // a fixture kept from an earlier run
			return
		}
		dir, err := os.MkdirTemp("", "ui-bench-")
		if err != nil {
			benchErr = err
			return
		}
		path := filepath.Join(dir, "bench.db")
		n := benchEvents()
		start := time.Now()
		s, err := memory.Open(context.Background(), path, nil)
		if err != nil {
			benchErr = err
			return
		}
		s.Close()
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=cache_size(-262144)")
		if err != nil {
			benchErr = err
			return
		}
		defer db.Close()
		db.SetMaxOpenConns(1)
		for _, q := range []string{
			`WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ?1)
			 INSERT INTO memory_events (id, ts, session, kind, content, prev_hash, hash)
			 SELECT i, strftime('%Y-%m-%dT%H:%M:%SZ', 1767225600 + i, 'unixepoch'),
			        CASE WHEN i % 3 = 0 THEN '20260101T000000Z-cafe@alice' ELSE '20260101T000000Z-beef' END,
			        CASE i % 5 WHEN 0 THEN 'note' WHEN 1 THEN 'decision' WHEN 2 THEN 'observation' WHEN 3 THEN 'action' ELSE 'error' END,
			        'event ' || i || ': ran the migration on table orders_' || (i % 97) || '; 42 rows changed, "ok"',
			        printf('%064d', i - 1), printf('%064d', i)
			 FROM c`,
			`WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ?1 / 1000)
			 INSERT INTO memory_checkpoints (id, ts, session, summary, last_event_id, head_hash)
			 SELECT i, strftime('%Y-%m-%dT%H:%M:%SZ', 1767225600 + i * 1000, 'unixepoch'), '20260101T000000Z-beef',
			        'checkpoint ' || i || ': the migration is at table orders_' || (i % 97), i * 1000, printf('%064d', i * 1000)
			 FROM c`,
			`INSERT INTO memory_events_fts(memory_events_fts) VALUES ('rebuild')`,
			`INSERT INTO memory_checkpoints_fts(memory_checkpoints_fts) VALUES ('rebuild')`,
			`WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < max(?1 / 10, 100))
			 INSERT INTO query_log (id, ts, session, tool, query, ok, rows, error, duration_ms, detail)
			 SELECT i, strftime('%Y-%m-%dT%H:%M:%SZ', 1767225600 + i * 30, 'unixepoch'),
			        CASE WHEN i % 3 = 0 THEN '20260101T000000Z-cafe@alice' ELSE '20260101T000000Z-beef' END,
			        CASE i % 4 WHEN 0 THEN 'read_query' WHEN 1 THEN 'write_query' WHEN 2 THEN 'append_event' ELSE 'destructive_query' END,
			        'SELECT * FROM orders_' || (i % 97) || ' WHERE id = ' || i,
			        i % 20 <> 0, i % 7,
			        CASE WHEN i % 20 = 0 THEN 'SQL_ERROR: no such table: orders_' || (i % 97) END,
			        i % 50, '{"limit": 100}'
			 FROM c`,
		} {
			if _, err := db.Exec(q, n); err != nil {
				benchErr = err
				return
			}
		}
		b.Logf("built a %d-event fixture in %v", n, time.Since(start).Round(time.Millisecond))
		benchPath, benchDir = path, dir
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchPath
}

var idCell = regexp.MustCompile(`<td class="num">(\d+)</td>`)

// benchPage measures one page against the yardstick: a SELECT, on the
// same kind of read-only connection and prepared once as the page's
// statements are, of the rows the page shows, by id.
// It reports the page's and the SELECT's time and their ratio.
func benchPage(b *testing.B, target, table, columns string) {
	path := benchFixture(b)
	u, err := New(context.Background(), Options{DB: path, SnapshotDir: filepath.Join(filepath.Dir(path), "none"), Hosts: []string{testHost},
		Authorized: func(*http.Request) bool { return true }})
	if err != nil {
		b.Fatal(err)
	}
	defer u.Close()
	h := u.Handler()
	serve := func() string {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://"+testHost+target, nil))
		if w.Code != 200 {
			b.Fatalf("%s: %d %s", target, w.Code, w.Body.String())
		}
		return w.Body.String()
	}
	var ids []any
	for _, m := range idCell.FindAllStringSubmatch(serve(), -1) {
		ids = append(ids, m[1])
	}
	if len(ids) == 0 {
		b.Fatalf("%s shows no rows", target)
	}
	stmt := `SELECT ` + columns + ` FROM ` + table + ` WHERE id IN (?` + strings.Repeat(", ?", len(ids)-1) + `)`
	cols := strings.Count(columns, ",") + 1
	// Prepared once, as the page's statements are.
	yardstick, err := u.db.Prepare(stmt)
	if err != nil {
		b.Fatal(err)
	}
	defer yardstick.Close()
	selectRows := func() {
		rows, err := yardstick.Query(ids...)
		if err != nil {
			b.Fatal(err)
		}
		dst := make([]any, cols)
		for i := range dst {
			dst[i] = new(sql.RawBytes)
		}
		n := 0
		for rows.Next() {
			if err := rows.Scan(dst...); err != nil {
				b.Fatal(err)
			}
			n++
		}
		rows.Close()
		if n == 0 {
			b.Fatal("the yardstick read no rows")
		}
	}
	selectRows()
	var page, sel time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		serve()
		t1 := time.Now()
		selectRows()
		page, sel = page+t1.Sub(t0), sel+time.Since(t1)
	}
	b.ReportMetric(float64(page.Microseconds())/float64(b.N), "page-µs")
	b.ReportMetric(float64(sel.Microseconds())/float64(b.N), "select-µs")
	b.ReportMetric(float64(page)/float64(sel), "x-select")
}

// BenchmarkTimelineFirstPage: the first timeline page (SPEC 10: within 5x
// the SELECT of its rows by id).
func BenchmarkTimelineFirstPage(b *testing.B) {
	benchPage(b, "/", "memory_events", "id, ts, session, kind, content")
}

// BenchmarkTimelineDeepPage: a page in the middle of the chain, by keyset.
func BenchmarkTimelineDeepPage(b *testing.B) {
	benchPage(b, "/?before="+strconv.Itoa(benchEvents()/2), "memory_events", "id, ts, session, kind, content")
}

// BenchmarkActivityErrors: the activity page with errors only (its
// chart included).
func BenchmarkActivityErrors(b *testing.B) {
	benchPage(b, "/activity?errors=1", "query_log", "id, ts, session, tool, query, ok, rows, error, duration_ms, detail")
}

// BenchmarkSearch: a ranked search for a word about 1 in 97 events hold
// (bm25 ranks every match, as get_resume_context's recall does).
func BenchmarkSearch(b *testing.B) {
	benchPage(b, "/?q=orders_7", "memory_events", "id, ts, session, kind, content")
}

// BenchmarkSearchRare: a ranked search for a word one event holds.
func BenchmarkSearchRare(b *testing.B) {
	benchPage(b, "/?q="+strconv.Itoa(benchEvents()/2+1), "memory_events", "id, ts, session, kind, content")
}
