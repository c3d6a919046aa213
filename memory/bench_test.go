package memory

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// benchDir holds fixtures shared by the benchmarks of one run.
var (
	benchDir     string
	benchDirOnce sync.Once
)

func TestMain(m *testing.M) {
	code := m.Run()
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

func sharedDir(b *testing.B) string {
	benchDirOnce.Do(func() {
		dir, err := os.MkdirTemp("", "memory-bench-")
		if err != nil {
			b.Fatal(err)
		}
		benchDir = dir
	})
	return benchDir
}

var (
	fixture1M     string
	fixture1MOnce sync.Once
	fixture1MErr  error
)

// chainFixture returns a database with n valid events, built once per run
// in one transaction.
func chainFixture(b *testing.B, n int) string {
	fixture1MOnce.Do(func() {
		path := filepath.Join(sharedDir(b), "chain-1m.db")
		s, err := Open(context.Background(), path, nil)
		if err != nil {
			fixture1MErr = err
			return
		}
		defer s.Close()
		start := time.Now()
		fixture1MErr = fillChain(s, n)
		b.Logf("built %d-event fixture in %v", n, time.Since(start))
		fixture1M = path
	})
	if fixture1MErr != nil {
		b.Fatal(fixture1MErr)
	}
	return fixture1M
}

func fillChain(s *Store, n int) error {
	ctx := context.Background()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	st := tx.StmtContext(ctx, s.insertEvent)
	prev := GenesisHash
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const session = "20260101T000000Z-beef"
	kinds := []string{"note", "decision", "observation", "action", "error"}
	for id := int64(1); id <= int64(n); id++ {
		ts := t0.Add(time.Duration(id) * time.Second).Format(TimeLayout)
		kind := kinds[id%int64(len(kinds))]
		content := fmt.Sprintf("event %d: ran the migration on table orders_%d; 42 rows changed, \"ok\"", id, id%97)
		h := Hash(id, ts, session, kind, content, prev)
		if _, err := st.ExecContext(ctx, id, ts, session, kind, content, prev, h); err != nil {
			return err
		}
		prev = h
	}
	return tx.Commit()
}

// BenchmarkVerify1M measures verify_chain over 1,000,000 events (SPEC 10:
// <= 2 s). One op is one full verification.
func BenchmarkVerify1M(b *testing.B) {
	const n = 1_000_000
	path := chainFixture(b, n)
	s, err := OpenExisting(context.Background(), path, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		v, err := s.Verify(context.Background())
		if err != nil || !v.OK || v.Events != n {
			b.Fatalf("verify = %+v, %v", v, err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkAppend measures append_event (SPEC 10: >= 2,000/s). One op is
// one committed append.
func BenchmarkAppend(b *testing.B) {
	s, err := Open(context.Background(), filepath.Join(b.TempDir(), "append.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		i++
		if _, err := s.Append(ctx, "20260101T000000Z-beef", "note", fmt.Sprintf("benchmark event %d with some words", i)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkHash is the pure canonical+SHA-256 cost of one event.
func BenchmarkHash(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Hash(123456, "2026-01-05T09:00:00Z", "20260105T090000Z-a1b2", "note",
			"event 123456: ran the migration on table orders_7; 42 rows changed, \"ok\"", GenesisHash)
	}
}
