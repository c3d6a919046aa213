package memory

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/embed"
)

// benchEmbedder is a 100-dimensional model of the benchmark chain's words
// (random unit-ish vectors: the cost does not depend on what they mean).
func benchEmbedder(b *testing.B) *embed.Model {
	b.Helper()
	words := []string{"[UNK]", "event", "ran", "the", "migration", "on", "table", "orders", "rows", "changed", "ok", "benchmark", "parse", "config"}
	r := rand.New(rand.NewPCG(1, 2))
	vecs := make([][]float32, len(words))
	for i := range vecs {
		vecs[i] = make([]float32, 100)
		for j := range vecs[i] {
			vecs[i][j] = float32(r.NormFloat64())
		}
	}
	dir := b.TempDir()
	if err := embed.Write(dir, words, vecs, false); err != nil {
		b.Fatal(err)
	}
	m, err := embed.Load(dir)
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// BenchmarkRecallVectors100k compares, on one 100,000-event file, the
// recall tool's path with vectors (the 30 best word matches re-ranked:
// their vectors read, the query embedded) against the same path without
// (today's word ranking), p50 of each, alternating. "rare" (12345) has no
// word the model knows, so it is the word ranking plus one lookup;
// "common" (orders_7) is fused.
func BenchmarkRecallVectors100k(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "vectors-100k.db"), nil)
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
	m := benchEmbedder(b)
	if err := s.UseEmbeddings(ctx, m, DefaultFusion); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ name, query string }{{"rare", "12345"}, {"common", "orders_7"}} {
		b.Run(c.name, func(b *testing.B) {
			timed := func(e Embedder) time.Duration {
				s.emb = e
				start := time.Now()
				if _, err := s.Recall(ctx, RecallOptions{Query: c.query}); err != nil {
					b.Fatal(err)
				}
				return time.Since(start)
			}
			var tWords, tVectors []time.Duration
			for b.Loop() {
				for range 21 {
					tWords = append(tWords, timed(nil))
					tVectors = append(tVectors, timed(m))
				}
			}
			s.emb = m
			b.ReportMetric(float64(p50(tWords).Microseconds()), "words-p50-us")
			b.ReportMetric(float64(p50(tVectors).Microseconds()), "vectors-p50-us")
			b.ReportMetric(float64(p50(tVectors))/float64(p50(tWords)), "vectors-vs-words")
		})
	}
}

// BenchmarkAppendVectors measures committed appends that also write their
// vector (a 100-dimensional model) against appends without a model,
// chunks of 50 alternating. One op is one append of each kind.
func BenchmarkAppendVectors(b *testing.B) {
	ctx := context.Background()
	with, err := Open(ctx, filepath.Join(b.TempDir(), "with.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer with.Close()
	if err := with.UseEmbeddings(ctx, benchEmbedder(b), DefaultFusion); err != nil {
		b.Fatal(err)
	}
	without, err := Open(ctx, filepath.Join(b.TempDir(), "without.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer without.Close()
	const chunk = 50
	var tWith, tWithout time.Duration
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
		tWith += run(with, n)
		tWithout += run(without, n)
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(n/tWith.Seconds(), "with-appends/s")
	b.ReportMetric(n/tWithout.Seconds(), "without-appends/s")
	b.ReportMetric(float64(tWith)/float64(tWithout), "with-vs-without")
}
