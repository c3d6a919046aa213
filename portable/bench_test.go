package portable

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/memory"
)

// benchEvents is the size of the 1M benchmark's chain: 1,000,000, or
// MCP_SQLITE_BENCH_EVENTS, which .ci/run sets low so that its short pass
// keeps it running without building a million events.
func benchEvents() int {
	if n, err := strconv.Atoi(os.Getenv("MCP_SQLITE_BENCH_EVENTS")); err == nil && n > 0 {
		return n
	}
	return 1_000_000
}

var (
	fixtureOnce sync.Once
	fixture     string
	fixtureErr  error
)

// chainFixture returns a memory database with benchEvents() valid events,
// built once per run (the index is left to the server; export reads the
// chain only).
func chainFixture(b *testing.B) string {
	fixtureOnce.Do(func() {
		dir, err := os.MkdirTemp("", "portable-bench-")
		if err != nil {
			fixtureErr = err
			return
		}
		fixture = filepath.Join(dir, "chain.db")
		start := time.Now()
		if fixtureErr = newMemory(fixture); fixtureErr == nil {
			fixtureErr = fillChain(fixture, benchEvents())
		}
		b.Logf("built %d-event fixture in %v", benchEvents(), time.Since(start))
	})
	if fixtureErr != nil {
		b.Fatal(fixtureErr)
	}
	return fixture
}

// newMemory creates a memory database at path (the server schema).
func newMemory(path string) error {
	s, err := memory.Open(context.Background(), path, nil)
	if err != nil {
		return err
	}
	return s.Close()
}

// fillChain writes n valid events into the empty memory database at path
// in one transaction: the floor of writing rows, with no index, no
// reading and no checking.
func fillChain(path string, n int) error {
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=synchronous(FULL)&_txlock=immediate")
	if err != nil {
		return err
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	// A page cache big enough for the hash index: with the default 2 MB the
	// random inserts into it thrash.
	if _, err := tx.ExecContext(ctx, `PRAGMA cache_size = -262144`); err != nil {
		return err
	}
	st, err := tx.PrepareContext(ctx, `INSERT INTO memory_events (id, ts, session, kind, content, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer st.Close()
	prev := memory.GenesisHash
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const session = "20260101T000000Z-beef"
	kinds := []string{"note", "decision", "observation", "action", "error"}
	for id := int64(1); id <= int64(n); id++ {
		ts := t0.Add(time.Duration(id) * time.Second).Format(memory.TimeLayout)
		kind := kinds[id%int64(len(kinds))]
		content := fmt.Sprintf("event %d: ran the migration on table orders_%d; 42 rows changed, \"ok\"", id, id%97)
		h := memory.Hash(id, ts, session, kind, content, prev)
		if _, err := st.ExecContext(ctx, id, ts, session, kind, content, prev, h); err != nil {
			return err
		}
		prev = h
	}
	return tx.Commit()
}

// BenchmarkPortable1M measures export and import of 1,000,000 events (the
// import verifies every hash and builds the full-text index in its
// transaction) against verify_chain over the same chain, in one run, and
// import against the floor of writing the same rows: fillChain's bulk
// insert of 1M events into a new file (one transaction, no index, no
// reading or checking).
func BenchmarkPortable1M(b *testing.B) {
	ctx := context.Background()
	path := chainFixture(b)
	s, err := memory.OpenExisting(ctx, path, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Verify(ctx); err != nil { // warm the page cache
		b.Fatal(err)
	}
	dir := b.TempDir()
	var verify, export, imp, bulk time.Duration
	for i := 0; b.Loop(); i++ {
		floor := filepath.Join(dir, fmt.Sprintf("bulk-%d.db", i))
		if err := newMemory(floor); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if err := fillChain(floor, benchEvents()); err != nil {
			b.Fatal(err)
		}
		bulk += time.Since(start)

		start = time.Now()
		if v, err := s.Verify(ctx); err != nil || !v.OK {
			b.Fatalf("verify: %+v %v", v, err)
		}
		verify += time.Since(start)

		file := filepath.Join(dir, fmt.Sprintf("export-%d.jsonl", i))
		f, err := os.Create(file)
		if err != nil {
			b.Fatal(err)
		}
		start = time.Now()
		st, err := Export(ctx, s, f, nil)
		if err == nil {
			err = f.Close()
		}
		export += time.Since(start)
		if err != nil || st.Events != int64(benchEvents()) {
			b.Fatalf("export: %+v %v", st, err)
		}

		f, err = os.Open(file)
		if err != nil {
			b.Fatal(err)
		}
		start = time.Now()
		ist, err := Import(ctx, filepath.Join(dir, fmt.Sprintf("import-%d.db", i)), f, nil)
		imp += time.Since(start)
		f.Close()
		if err != nil || ist.Events != int64(benchEvents()) {
			b.Fatalf("import: %+v %v", ist, err)
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(verify.Milliseconds())/n, "verify-ms")
	b.ReportMetric(float64(export.Milliseconds())/n, "export-ms")
	b.ReportMetric(float64(imp.Milliseconds())/n, "import-ms")
	b.ReportMetric(float64(export)/float64(verify), "export-vs-verify")
	b.ReportMetric(float64(imp)/float64(verify), "import-vs-verify")
	b.ReportMetric(float64(bulk.Milliseconds())/n, "bulk-insert-ms")
	b.ReportMetric(float64(imp)/float64(bulk), "import-vs-bulk-insert")
}
