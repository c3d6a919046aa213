package audit

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// syncBuffer is a log sink the writer goroutine and the test share.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) count(s string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Count(b.buf.String(), s)
}

// holdWriteLock takes the write lock of path from another connection, as
// another process would, until the returned release is called.
func holdWriteLock(t *testing.T, path string) (release func()) {
	t.Helper()
	conn, err := rawDB(t, path).Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	done := false
	release = func() {
		if !done {
			done = true
			_, _ = conn.ExecContext(context.Background(), "COMMIT")
			conn.Close()
		}
	}
	t.Cleanup(release)
	return release
}

func entry(i int) Entry {
	return Entry{Session: "S", Tool: "read_query", Query: sql.NullString{String: fmt.Sprintf("SELECT %d", i), Valid: true}, OK: true}
}

func TestAuditQueueWaitsForTheLockInOrder(t *testing.T) {
	old := auditWarnAfter
	auditWarnAfter = 0
	t.Cleanup(func() { auditWarnAfter = old })
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	var logs syncBuffer
	s, err := open(ctx, path, hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	release := holdWriteLock(t, path)
	for i := range 20 {
		if err := s.Audit(ctx, entry(i)); err != nil {
			t.Fatal(err)
		}
		// Reads go on beside the held lock (WAL).
		if i == 10 {
			if v, err := s.Verify(ctx); err != nil || !v.OK {
				t.Fatalf("verify while locked: %+v, %v", v, err)
			}
		}
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := s.FlushAudit(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("flush while another connection holds the lock: %v", err)
	}
	release()
	if err := s.FlushAudit(ctx); err != nil {
		t.Fatal(err)
	}
	rows := readAudit(t, rawDB(t, path))
	if len(rows) != 20 {
		t.Fatalf("%d rows, want 20", len(rows))
	}
	for i, r := range rows {
		if want := fmt.Sprintf("SELECT %d", i); r.query.String != want {
			t.Fatalf("row %d is %q, want %q: rows out of call order", i, r.query.String, want)
		}
	}
	// FlushAudit returns when the rows are written, which is before the
	// writer logs its recovery; once the writer has ended, its lines are in.
	s.Queue.Close()
	if n := logs.count("audit rows are waiting"); n != 1 {
		t.Errorf("%d waiting lines, want one per episode:\n%s", n, logs.buf.String())
	}
	if n := logs.count("audit rows written after waiting"); n != 1 {
		t.Errorf("%d recovery lines, want 1", n)
	}
}

func TestAuditCloseFlushes(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "a.db")
	a, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		if err := a.Audit(ctx, entry(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if rows := readAudit(t, rawDB(t, path)); len(rows) != 500 || rows[499].query.String != "SELECT 499" {
		t.Fatalf("%d rows after close, want 500", len(rows))
	}
}

func TestAuditCloseGivesUpToTheLog(t *testing.T) {
	old := FlushTimeout
	FlushTimeout = 200 * time.Millisecond
	t.Cleanup(func() { FlushTimeout = old })
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	var logs syncBuffer
	s, err := open(ctx, path, hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info}))
	if err != nil {
		t.Fatal(err)
	}
	holdWriteLock(t, path)
	for i := range 2 {
		if err := s.Audit(ctx, entry(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := logs.count("audit row not written"); n != 2 {
		t.Fatalf("%d rows given up to the log, want 2:\n%s", n, logs.buf.String())
	}
	if logs.count("query=\"SELECT 1\"") != 1 {
		t.Fatalf("the log does not carry the row:\n%s", logs.buf.String())
	}
	if err := s.Audit(ctx, entry(7)); !errors.Is(err, ErrClosed) || logs.count("SELECT 7") != 1 {
		t.Fatalf("audit after close: %v", err)
	}
}

func TestBound(t *testing.T) {
	long := strings.Repeat("é", 10) // 20 bytes
	tests := []struct {
		name       string
		in         Entry
		max        int
		wantQuery  string
		wantError  string
		wantDetail string
	}{
		{"short stays", Entry{Query: sql.NullString{String: "SELECT 1", Valid: true}, Detail: map[string]any{"limit": 1}},
			16, "SELECT 1", "", `{"limit": 1}`},
		{"cut at a character boundary", Entry{Query: sql.NullString{String: "a" + long, Valid: true}},
			8, "aééé", "",
			`{"query_bytes": 21, "query_sha256": "` + sha256Hex("a"+long) + `"}`},
		{"detail kept beside the query note", Entry{Query: sql.NullString{String: long, Valid: true}, Detail: map[string]any{"limit": 1}},
			64, long, "", `{"limit": 1}`},
		{"error cut", Entry{Error: "SQL_ERROR: " + long},
			16, "", "SQL_ERROR: éé...[+16 bytes]", ""},
		{"huge detail replaced", Entry{Detail: map[string]any{"where": strings.Repeat("x", 100)}},
			16, "", "",
			`{"detail_bytes": 113, "detail_prefix": "{\"where\": \"xxxxx", "detail_sha256": "` + sha256Hex(`{"where": "`+strings.Repeat("x", 100)+`"}`) + `"}`},
		{"no limit", Entry{Query: sql.NullString{String: long, Valid: true}}, 0, long, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := tt.in
			e.Bound(tt.max)
			detail := ""
			if len(e.Detail) > 0 {
				detail = DetailJSON(e.Detail)
			}
			if e.Query.String != tt.wantQuery || e.Error != tt.wantError || detail != tt.wantDetail {
				t.Fatalf("got query %q error %q detail %s\nwant query %q error %q detail %s", e.Query.String, e.Error, detail, tt.wantQuery, tt.wantError, tt.wantDetail)
			}
		})
	}
}

func TestAuditQueueIsBounded(t *testing.T) {
	old := auditQueueMax
	auditQueueMax = 1000
	t.Cleanup(func() { auditQueueMax = old })
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	var logs syncBuffer
	s, err := open(ctx, path, hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	release := holdWriteLock(t, path)
	for i := range 5 {
		e := entry(i)
		e.Query.String += strings.Repeat(" ", 300)
		if err := s.Audit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	release()
	if err := s.FlushAudit(ctx); err != nil {
		t.Fatal(err)
	}
	rows := readAudit(t, rawDB(t, path))
	lost := logs.count("audit row not queued")
	if len(rows) == 0 || lost == 0 || len(rows)+lost != 5 {
		t.Fatalf("%d rows written, %d logged instead: want some of each, 5 in all", len(rows), lost)
	}
	for i, r := range rows {
		if !strings.HasPrefix(r.query.String, fmt.Sprintf("SELECT %d ", i)) {
			t.Fatalf("row %d is %q: the queue keeps the oldest rows, in order", i, r.query.String)
		}
	}
}

// TestAuditSyncsPerBatch checks the audit writer's durability (see
// auditWriter): in WAL mode every batch is followed by a sync of the WAL,
// at most one per batch, the last one before Close returns; the benchmark's
// NORMAL yardstick syncs nothing, as the server did before.
func TestAuditSyncsPerBatch(t *testing.T) {
	for _, tc := range []struct {
		name      string
		durable   bool
		wantSyncs bool
	}{{"durable store", true, true}, {"benchmark's NORMAL yardstick", false, false}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "m.db")
			var s *testStore
			if tc.durable {
				var err error
				if s, err = open(ctx, path, nil); err != nil {
					t.Fatal(err)
				}
			} else {
				s = openNormal(t, path)
			}
			for i := range 200 {
				if err := s.Audit(ctx, entry(i)); err != nil {
					t.Fatal(err)
				}
			}
			w := s.Queue
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			batches, syncs := w.batches.Load(), w.syncs.Load()
			switch {
			case batches == 0:
				t.Fatal("no batch written")
			case tc.wantSyncs && (syncs == 0 || syncs > batches):
				t.Fatalf("%d WAL syncs after %d batches; want 1 to %d", syncs, batches, batches)
			case !tc.wantSyncs && syncs != 0:
				t.Fatalf("%d WAL syncs on a NORMAL store; want none", syncs)
			}
		})
	}
}

// TestAuditNeverDelaysTheReply: Audit returns before its row is written
// (SPEC 5), even with the row held up for as long as a test runs; the
// next call's AwaitAudit waits for it while rows flow, and then the row
// is readable.
func TestAuditNeverDelaysTheReply(t *testing.T) {
	old := auditSettle
	auditSettle = time.Hour
	t.Cleanup(func() { auditSettle = old })
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	s, err := open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// This process's own writer (an append) holds the write mutex: the
	// writer goroutine waits for it, and rows still flow.
	s.writeMu.Lock()
	locked := true
	defer func() {
		if locked {
			s.writeMu.Unlock()
		}
	}()
	if err := s.Audit(ctx, entry(1)); err != nil { // under the old rule: an hour
		t.Fatal(err)
	}
	if n := len(readAudit(t, rawDB(t, path))); n != 0 {
		t.Fatalf("%d rows written while the write mutex is held", n)
	}
	awaited := make(chan struct{})
	go func() {
		s.AwaitAudit()
		close(awaited)
	}()
	select {
	case <-awaited:
		t.Fatal("AwaitAudit returned while the row it waits for could not be written")
	case <-time.After(100 * time.Millisecond):
	}
	s.writeMu.Unlock()
	locked = false
	<-awaited
	rows := readAudit(t, rawDB(t, path))
	if len(rows) != 1 || rows[0].query.String != "SELECT 1" {
		t.Fatalf("after AwaitAudit: %+v, want the row", rows)
	}
	// Nothing queued: AwaitAudit returns at once.
	s.AwaitAudit()
}
