package tests

import (
	"fmt"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// BenchmarkReadQueryRoundTrip measures one read_query call over stdio, as a
// host sees it: JSON-RPC in, a worker process, CSV out. It reports the
// percentiles of the per-call latency. "spaced" leaves 20 ms between calls
// (untimed), as an agent does while its model thinks, so the standby worker
// is ready; "back-to-back" calls as fast as the server answers.
func BenchmarkReadQueryRoundTrip(b *testing.B) {
	for _, tc := range []struct {
		name    string
		standby int
		gap     time.Duration
	}{
		{"standby=1/spaced", 1, 20 * time.Millisecond},
		{"standby=0/spaced", 0, 20 * time.Millisecond},
		{"standby=1/back-to-back", 1, 0},
	} {
		standby := tc.standby
		b.Run(tc.name, func(b *testing.B) {
			db := filepath.Join(b.TempDir(), "bench.db")
			s := start(b, db, "--standby-workers", fmt.Sprint(standby))
			s.ok("write_query", q("CREATE TABLE kv (id INTEGER PRIMARY KEY, name TEXT, value REAL)"))
			s.ok("write_query", q("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000) INSERT INTO kv SELECT x, 'name ' || x, x / 7.0 FROM c"))
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				if tc.gap > 0 {
					b.StopTimer()
					time.Sleep(tc.gap)
					b.StartTimer()
				}
				start := time.Now()
				text, isErr := s.call("read_query", q(fmt.Sprintf("SELECT id, name, value FROM kv WHERE id = %d", i%1000+1)))
				lat = append(lat, time.Since(start))
				if isErr {
					b.Fatal(text)
				}
			}
			b.StopTimer()
			reportPercentiles(b, lat)
		})
	}
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 {
		return float64(lat[int(float64(len(lat)-1)*p)].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.95), "p95-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}
