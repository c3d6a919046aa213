package tests

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"
)

// The HTTP benchmarks, ratios against yardsticks of the same run:
//
//	go test -run '^$' -bench 'HTTP' -benchtime 50x ./tests/
//
//	http-2025/stdio, http-2026/stdio   paced primary-key read_query over HTTP vs stdio (SPEC 10, 11)
//	agents32: calls/s, p50-ms, p99-ms  32 agents at once on one server, nothing lost

// BenchmarkHTTPCallLatency: in each round, one paced primary-key
// read_query over stdio, over HTTP with a 2025-11-25 session and over
// HTTP with 2026-07-28 stateless requests, to two servers of one file;
// and a ping over the 2025-11-25 session as HTTP's floor (a 2026-07-28
// client answers ping itself: liveness is the transport's there).
func BenchmarkHTTPCallLatency(b *testing.B) {
	db := filepath.Join(testDir(b), "latency.db")
	local := start(b, db)
	itemsTable(local)
	h := startHTTP(b, db, []string{"bench"})
	legacy := h.connect(b, "bench", false)
	modern := h.connect(b, "bench", true)
	sessions := []*session{local, legacy, modern}
	windows := make([][]window, 3)
	var pings []time.Duration
	time.Sleep(time.Second) // the pools fill after start-up
	b.ResetTimer()
	for i := range b.N {
		for k, s := range sessions {
			windows[k] = append(windows[k], pacedRead(s, i))
		}
		time.Sleep(pacedGap)
		start := time.Now()
		//lint:ignore SA1019 the 2025-11-25 session still pings: HTTP's floor
		if err := legacy.c.Ping(context.Background()); err != nil {
			b.Fatal(err)
		}
		pings = append(pings, time.Since(start))
	}
	b.StopTimer()
	reads := [][]time.Duration{took(windows[0]), took(windows[1]), took(windows[2])}
	p50 := func(d []time.Duration) float64 { return percentile(d, 0.5) }
	b.ReportMetric(p50(reads[0]), "stdio-p50-ms")
	b.ReportMetric(p50(reads[1]), "http-2025-p50-ms")
	b.ReportMetric(p50(reads[2]), "http-2026-p50-ms")
	b.ReportMetric(p50(pings), "http-ping-p50-ms")
	b.ReportMetric(p50(reads[1])/p50(reads[0]), "http-2025/stdio")
	b.ReportMetric(p50(reads[2])/p50(reads[0]), "http-2026/stdio")
	b.ReportMetric(p50(reads[1])/p50(pings), "http-2025/http-ping")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkHTTPAgents32: 32 agents, each with its own token and client
// (half of each generation), each makes b.N calls one after the other,
// alternating a primary-key read_query and an append_event; calls/s over
// the run, p50 and p99 per call; afterwards every acknowledged event is
// in the chain once and the chain verifies.
func BenchmarkHTTPAgents32(b *testing.B) {
	const agents = 32
	db := filepath.Join(testDir(b), "agents.db")
	names := make([]string, agents)
	for i := range names {
		names[i] = fmt.Sprintf("agent%02d", i)
	}
	h := startHTTP(b, db, names)
	first := h.connect(b, names[0], false)
	first.ok("write_query", q("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT)"))
	first.ok("write_query", q("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000) INSERT INTO items SELECT x, 'item ' || x FROM c"))
	clients := make([]*session, agents)
	for i, n := range names {
		clients[i] = h.connect(b, n, i%2 == 1)
	}
	idRE := regexp.MustCompile(`^ok: event (\d+) appended`)
	var mu sync.Mutex
	var lat []time.Duration
	acked := map[int]string{}
	var wg sync.WaitGroup
	time.Sleep(time.Second)
	b.ResetTimer()
	began := time.Now()
	for a, s := range clients {
		wg.Go(func() {
			for i := range b.N {
				start := time.Now()
				var text string
				var isErr bool
				content := fmt.Sprintf("%s %d", names[a], i)
				if i%2 == 0 {
					text, isErr = s.call("read_query", q(fmt.Sprintf("SELECT name FROM items WHERE id = %d", (a*b.N+i)%1000+1)))
				} else {
					text, isErr = s.call("append_event", map[string]any{"content": content})
				}
				d := time.Since(start)
				if isErr {
					b.Errorf("%s: %s", names[a], text)
					return
				}
				mu.Lock()
				lat = append(lat, d)
				if m := idRE.FindStringSubmatch(text); m != nil {
					id, _ := strconv.Atoi(m[1])
					acked[id] = content
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	took := time.Since(began)
	b.StopTimer()
	if v := first.verify(); !v.OK || v.Events != len(acked) {
		b.Fatalf("after the run: %+v, %d acknowledged appends", v, len(acked))
	}
	d := openDirect(b, db)
	for id, content := range acked {
		var n int
		if err := d.QueryRow(`SELECT count(*) FROM memory_events WHERE id = ? AND content = ?`, id, content).Scan(&n); err != nil || n != 1 {
			b.Fatalf("acknowledged event %d (%q): %d rows, %v", id, content, n, err)
		}
	}
	b.ReportMetric(float64(len(lat))/took.Seconds(), "calls/s")
	b.ReportMetric(percentile(lat, 0.5), "p50-ms")
	b.ReportMetric(percentile(lat, 0.99), "p99-ms")
	b.ReportMetric(0, "ns/op")
}
