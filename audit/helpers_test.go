package audit

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/memory"
)

// testStore is a memory store with its audit queue, as the server holds
// them.
type testStore struct {
	*Queue
	store   *memory.Store
	writeMu *sync.Mutex
	db      *sql.DB // the store's pool
}

// Close closes the store, which writes the queue first.
func (s *testStore) Close() error { return s.store.Close() }

func (s *testStore) Verify(ctx context.Context) (memory.Verification, error) {
	return s.store.Verify(ctx)
}

// open opens the memory database at path and its audit queue.
func open(ctx context.Context, path string, log hclog.Logger) (*testStore, error) {
	st, err := memory.Open(ctx, path, log)
	if err != nil {
		return nil, err
	}
	q := ForStore(st)
	sh := st.Share(nil)
	return &testStore{Queue: q, store: st, writeMu: sh.WriteMu, db: sh.DB}, nil
}

func openStore(t testing.TB, path string) *testStore {
	t.Helper()
	s, err := open(context.Background(), path, testLogger(t))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// openNormal is open with the store's connections at synchronous=NORMAL
// and a queue that does not sync: the benchmark's yardstick, what the
// server did before its writes were durable.
func openNormal(t testing.TB, path string) *testStore {
	t.Helper()
	st, err := memory.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=synchronous(NORMAL)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	mu := new(sync.Mutex)
	q := newQueue(db, path, false, mu, time.Now, nil)
	st.Share(func() { q.Close(); db.Close() })
	return &testStore{Queue: q, store: st, writeMu: mu, db: db}
}

// fixedClock pins the queue's clock, ticking one second per call.
func fixedClock(s *testStore, start time.Time) {
	n := 0
	s.now = func() time.Time {
		n++
		return start.Add(time.Duration(n-1) * time.Second)
	}
}

// testLogger sends the log to the test log.
func testLogger(t testing.TB) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "audit", Output: tWriter{t}, Level: hclog.Debug})
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}

// rawDB is a direct connection, as any other program would open the file.
func rawDB(t testing.TB, path string) *sql.DB {
	t.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	db, err := sql.Open("sqlite", "file:"+path+sep+"_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func mustExec(t testing.TB, db *sql.DB, query string, args ...any) {
	t.Helper()
	if _, err := db.Exec(query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}
