package memory

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkRecall100k compares, on one 100,000-event file, the recall
// path (rankRecall over memory_recall: stemmed words and identifier
// parts, the match count and the 10 best rows joined) with the word-only
// recall before issue 47 (the same count and ranked statement over
// memory_events_fts), p50 of each, alternating. Three queries: a rare word
// (one event), a common identifier (orders_7: ~1,000 events, all scored;
// its word "orders" is in every event's identifier parts) and common
// words (in every event; recall also searches their pairs).
func BenchmarkRecall100k(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "recall-100k.db")
	s, err := Open(ctx, path, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if err := fillChain(s, 100_000); err != nil {
		b.Fatal(err)
	}
	if _, err := s.CatchUp(ctx); err != nil {
		b.Fatal(err)
	}
	// The word-only recall as it was: count, then the best rows ranked on
	// memory_events_fts and joined.
	const beforeCount = `SELECT count(*) FROM memory_events_fts WHERE memory_events_fts MATCH ?`
	const beforeRanked = `SELECT e.id, e.ts, e.kind, e.content, -r.rank FROM (SELECT rowid AS id, rank FROM memory_events_fts WHERE memory_events_fts MATCH ?
 ORDER BY rank, rowid DESC LIMIT ?) AS r JOIN memory_events e ON e.id = r.id ORDER BY r.rank, e.id DESC`
	timed := func(f func(tx *sql.Tx) error) time.Duration {
		start := time.Now()
		tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			b.Fatal(err)
		}
		defer tx.Rollback()
		if err := f(tx); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	for _, c := range []struct{ name, query string }{{"rare", "12345"}, {"common", "orders_7"}, {"words", "migration rows changed"}} {
		b.Run(c.name, func(b *testing.B) {
			before, _ := RecallQuery(c.query)
			after, _ := recallMatch(c.query)
			var tBefore, tAfter []time.Duration
			rows := 0
			for b.Loop() {
				for range 21 { // samples per op, so that -benchtime 1x has a median
					tBefore = append(tBefore, timed(func(tx *sql.Tx) error {
						var n int
						if err := tx.QueryRow(beforeCount, before).Scan(&n); err != nil {
							return err
						}
						r, err := tx.Query(beforeRanked, before, 10)
						if err != nil {
							return err
						}
						for r.Next() {
						}
						r.Close()
						return r.Err()
					}))
					tAfter = append(tAfter, timed(func(tx *sql.Tx) error {
						hits, _, err := rankRecall(ctx, tx, after, recallFilter{checkpoints: true}, 10)
						rows = len(hits)
						return err
					}))
				}
			}
			b.ReportMetric(float64(p50(tBefore).Microseconds()), "before-p50-us")
			b.ReportMetric(float64(p50(tAfter).Microseconds()), "recall-p50-us")
			b.ReportMetric(float64(p50(tAfter))/float64(p50(tBefore)), "recall-vs-before")
			b.ReportMetric(float64(rows), "rows")
		})
	}
}

// BenchmarkAppendRecallIndex measures committed appends that write both
// indexes (the server now) against the same store writing the full-text
// index only (before issue 47), chunks of 50 alternating. One op is one
// append of each kind.
func BenchmarkAppendRecallIndex(b *testing.B) {
	ctx := context.Background()
	both, err := Open(ctx, filepath.Join(b.TempDir(), "both.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer both.Close()
	ftsOnly, err := Open(ctx, filepath.Join(b.TempDir(), "fts.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ftsOnly.Close()
	ftsOnly.noRecall = true
	const chunk = 50
	var tBoth, tFTS time.Duration
	i := 0
	run := func(s *Store, n int) time.Duration {
		start := time.Now()
		for range n {
			i++
			if _, err := s.Append(ctx, "20260101T000000Z-beef", "note",
				fmt.Sprintf("benchmark event %d: ran parseConfig on table orders_%d; 42 rows changed", i, i%97)); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}
	b.ResetTimer()
	for done := 0; done < b.N; done += chunk {
		n := min(chunk, b.N-done)
		tBoth += run(both, n)
		tFTS += run(ftsOnly, n)
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(n/tBoth.Seconds(), "both-appends/s")
	b.ReportMetric(n/tFTS.Seconds(), "fts-only-appends/s")
	b.ReportMetric(float64(tBoth)/float64(tFTS), "both-vs-fts-only")
}
