package tests

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/sandbox"
)

// The latency benchmarks measure what a user of an MCP host sees, through
// mcp-go's stdio client and the installed pair of binaries (the server
// with its lean worker beside it), and report every figure next to a
// yardstick from the same run: a shared 2-core machine is too noisy for
// absolute times to mean much, ratios taken side by side are not.
//
//	go test -run '^$' -bench 'CallLatency|WorkerSpawn' -benchtime 100x ./tests/
//
// SPEC 10's targets, as the metrics name them:
//
//	paced/ping            <= 2.0  (read_query, primary key, calls 100 ms apart, vs an MCP ping)
//	worker-share-p50-ms   <= 1.0  (of that call: the front hands the request off -> the answer is back)
//	paced/front-only              (the same vs verify_chain, a tool that needs no worker; SPEC 10 before 2026-12)
//	burst4/paced          <= 3    (4 read_query calls at once, p50 per call)
//	stream/paced          about 2 (read_query calls back to back)
//	rows1000/paced        <= 2    (1,000 rows x 5 columns)
//	worker/empty          <= 2.5  (spawn to answer, lean worker vs an empty Go program)

// pacedGap is the pause before a paced call: an agent's model thinks
// between calls, and the pool refills meanwhile. settle is the pause after
// a burst, which used up all four standbys.
const (
	pacedGap = 100 * time.Millisecond
	settle   = 500 * time.Millisecond
)

// BenchmarkCallLatency runs, in each of b.N rounds, one paced MCP ping
// (transport and front only), one paced primary-key read_query, one paced
// verify_chain (a tool that needs no worker), one paced 1,000-row
// read_query and one burst of four
// parallel read_query calls; then b.N*8 read_query calls back to back (a
// stream: after the first four, each call waits for a worker started when
// the previous one took the last standby). Interleaving the kinds gives
// them the same machine load. A round takes about 1 s. The server
// writes a call trace (MCP_SQLITE_CALLTRACE), from which the paced read's
// steps are reported: the worker's share as a metric, every step in the
// log (see docs/performance.md).
func BenchmarkCallLatency(b *testing.B) {
	dir := testDir(b)
	db := filepath.Join(dir, "latency.db")
	tracePath := filepath.Join(dir, "calls.jsonl")
	s := startEnv(b, db, []string{"MCP_SQLITE_CALLTRACE=" + tracePath}, "--max-result-bytes", "1048576")
	itemsTable(s)
	for i := range 10 {
		s.ok("append_event", map[string]any{"content": fmt.Sprintf("event %d", i)})
	}
	pk := pkRead
	rows := map[string]any{"query": "SELECT id, name, price, qty, note FROM items ORDER BY id", "limit": 1000}
	timed := func(tool string, args map[string]any) time.Duration {
		start := time.Now()
		text, isErr := s.call(tool, args)
		d := time.Since(start)
		if isErr {
			b.Fatalf("%s: %s", tool, text)
		}
		if tool == "read_query" && args["limit"] == 1000 && !strings.HasSuffix(text, "# 1000 rows") {
			b.Fatalf("1,000 rows: %q", text[max(0, len(text)-80):])
		}
		return d
	}
	pings := 0
	ping := func() time.Duration {
		pings++
		return rawPing(b, s, pings)
	}
	var paced, pinged, front, thousand, burst, stream []time.Duration
	var pacedCalls []window
	time.Sleep(time.Second) // the pool fills after start-up
	b.ResetTimer()
	for i := range b.N {
		// After a burst the pool refills four standbys one after the
		// other; the paced calls come once that is over, as they would
		// after an agent's think time.
		// Every measured call comes 100 ms after the call before it, as
		// SPEC 10 paces them: after the settle's idle 500 ms, wake-ups
		// measured slower on this VM, so an unmeasured ping goes first.
		time.Sleep(settle)
		ping()
		time.Sleep(pacedGap)
		pinged = append(pinged, ping())
		time.Sleep(pacedGap)
		sent := time.Now()
		paced = append(paced, timed("read_query", pk(i)))
		pacedCalls = append(pacedCalls, window{sent, time.Now()})
		time.Sleep(pacedGap)
		front = append(front, timed("verify_chain", nil))
		time.Sleep(pacedGap)
		thousand = append(thousand, timed("read_query", rows))
		time.Sleep(pacedGap)
		var mu sync.Mutex
		var wg sync.WaitGroup
		for j := range 4 {
			wg.Go(func() {
				d := timed("read_query", pk(i*4+j))
				mu.Lock()
				burst = append(burst, d)
				mu.Unlock()
			})
		}
		wg.Wait()
	}
	time.Sleep(settle) // the pool refills after the last burst
	for i := range 8 * b.N {
		stream = append(stream, timed("read_query", pk(i)))
	}
	b.StopTimer()

	p50 := func(d []time.Duration) float64 { return percentile(d, 0.5) }
	b.ReportMetric(p50(paced), "paced-p50-ms")
	b.ReportMetric(percentile(paced, 0.95), "paced-p95-ms")
	b.ReportMetric(p50(pinged), "ping-p50-ms")
	b.ReportMetric(p50(front), "front-only-p50-ms")
	b.ReportMetric(p50(burst), "burst4-p50-ms")
	b.ReportMetric(p50(stream), "stream-p50-ms")
	b.ReportMetric(p50(thousand), "rows1000-p50-ms")
	b.ReportMetric(p50(paced)/p50(pinged), "paced/ping")
	b.ReportMetric(p50(paced)/p50(front), "paced/front-only")
	steps := pacedSteps(b, tracePath, pacedCalls)
	b.ReportMetric(steps.p50("worker share"), "worker-share-p50-ms")
	if b.N > 1 {
		// b.Log keeps a benchmark's first lines only.
		fmt.Fprintf(os.Stderr, "paced primary-key read_query, p50 of each step over %d calls (ms):\n%s", len(pacedCalls), steps)
	}
	b.ReportMetric(p50(burst)/p50(paced), "burst4/paced")
	b.ReportMetric(p50(stream)/p50(paced), "stream/paced")
	b.ReportMetric(p50(thousand)/p50(paced), "rows1000/paced")
	b.ReportMetric(0, "ns/op") // the per-op time mixes everything above
}

// itemsTable creates the latency benchmarks' table through s: 1,000 rows
// of five columns, every fifth note NULL.
func itemsTable(s *session) {
	s.ok("write_query", q("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, price REAL, qty INTEGER, note TEXT)"))
	s.ok("write_query", q("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000) INSERT INTO items SELECT x, 'item ' || x, x * 0.37, x % 97, CASE WHEN x % 5 = 0 THEN NULL ELSE 'note ' || x END FROM c"))
}

// pkRead is read_query's arguments for a primary-key read of one of
// itemsTable's rows.
func pkRead(i int) map[string]any {
	return q(fmt.Sprintf("SELECT id, name, price, qty, note FROM items WHERE id = %d", i%1000+1))
}

// pacedRead waits pacedGap, then makes pkRead(i) through s: a paced call.
// It returns when the call was sent and its answer read.
func pacedRead(s *session, i int) window {
	time.Sleep(pacedGap)
	sent := time.Now()
	s.ok("read_query", pkRead(i))
	return window{sent, time.Now()}
}

// took returns how long each call of ws took.
func took(ws []window) []time.Duration {
	d := make([]time.Duration, len(ws))
	for i, w := range ws {
		d[i] = w.received.Sub(w.sent)
	}
	return d
}

// percentile returns the p-quantile of d in milliseconds.
func percentile(d []time.Duration, p float64) float64 {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return float64(s[int(float64(len(s)-1)*p)].Microseconds()) / 1000
}

// emptyProgram builds a Go program whose main does nothing: the floor of
// starting any Go process on this machine.
func emptyProgram(b *testing.B) string {
	if prebuilt := os.Getenv(prebuiltEnv); prebuilt != "" {
		// Built beside the pair (.ci/windows.sh), for a machine without Go.
		return filepath.Join(prebuilt, "empty"+filepath.Ext(serverBin))
	}
	dir := testDir(b)
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module empty\n\ngo 1.26\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	bin := filepath.Join(dir, "empty")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("build the empty program: %v\n%s", err, out)
	}
	return bin
}

// BenchmarkWorkerSpawn measures a worker from process start to its answer
// of a request it refuses at once (a protocol version it does not speak):
// start-up, package initialisation, a read and a write, no SQLite; and an
// empty Go program in the same loop. The server binary re-run as its
// worker initialises every package the server links (mcp-go's JSON-schema
// compiler among them); the lean worker links what a worker uses. With the
// sandbox, a default (cgo) build re-executes itself to confine all its
// threads and a CGO_ENABLED=0 build confines them in place; "launched" is
// how the server starts its workers on Linux: confined by the front before
// the exec, so no build re-executes. Standby workers pay all of this before
// their call; these figures are what a call pays when no standby is left,
// and what each refill costs the machine. A default build links cgo
// (modernc.org/libc imports github.com/google/uuid, which imports net), so
// the lean worker maps the dynamic loader and libc at every start; the
// "static" variants are the same code built with CGO_ENABLED=0.
func BenchmarkWorkerSpawn(b *testing.B) {
	db := filepath.Join(testDir(b), "spawn.db")
	start(b, db).ok("verify_chain", nil)
	sandboxEnv := sandbox.Allowance{DB: db}.Env()
	static := testDir(b)
	staticWorker, staticServer := filepath.Join(static, "worker"), filepath.Join(static, "server")
	if os.Getenv(prebuiltEnv) != "" {
		// Prebuilt binaries are cross-compiled, and so already built
		// without cgo: the static variants are the pair itself.
		staticWorker, staticServer = workerBin, serverBin
	} else {
		for bin, pkg := range map[string]string{staticServer: "../cmd/mcp-sqlite-memory", staticWorker: "../cmd/mcp-sqlite-memory-worker"} {
			cmd := exec.Command("go", "build", "-o", bin, pkg)
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("static build: %v\n%s", err, out)
			}
		}
	}
	type variant struct {
		name string
		bin  string
		args []string
		env  []string
		// launched starts the process confined by this one (Linux), as the
		// server starts its workers.
		launched bool
		lat      []time.Duration
	}
	variants := []*variant{
		{name: "empty", bin: emptyProgram(b)},
		{name: "worker", bin: workerBin},
		{name: "worker-sandbox", bin: workerBin, env: []string{sandboxEnv}},
		{name: "worker-launched", bin: workerBin, env: []string{sandboxEnv}, launched: runtime.GOOS == "linux"},
		{name: "worker-static-sandbox", bin: staticWorker, env: []string{sandboxEnv}},
		// The lean worker built with CGO_ENABLED=0, started as the server
		// starts it: no dynamic loader, no libc to map.
		{name: "worker-static-launched", bin: staticWorker, env: []string{sandboxEnv}, launched: runtime.GOOS == "linux"},
		{name: "server", bin: serverBin, args: []string{"worker"}},
		{name: "server-sandbox", bin: serverBin, args: []string{"worker"}, env: []string{sandboxEnv}},
		{name: "server-static-sandbox", bin: staticServer, args: []string{"worker"}, env: []string{sandboxEnv}},
	}
	b.ResetTimer()
	for range b.N {
		for _, v := range variants {
			cmd := exec.Command(v.bin, v.args...)
			cmd.Env = append(os.Environ(), v.env...)
			cmd.Stdin = strings.NewReader(`{"v":999,"op":"query","db":"x"}`)
			var stdout bytes.Buffer
			cmd.Stdout = &stdout
			begin := time.Now()
			var err error
			if v.launched {
				reaped := make(chan struct{})
				if _, err = sandbox.StartConfined(cmd, sandbox.Allowance{DB: db}, reaped); err == nil {
					err = cmd.Wait()
				}
				close(reaped)
			} else {
				err = cmd.Run()
			}
			v.lat = append(v.lat, time.Since(begin))
			out := stdout.Bytes()
			if v.name != "empty" && (err != nil || !strings.Contains(string(out), "protocol version 999")) {
				b.Fatalf("%s: %v: %s", v.name, err, out)
			}
		}
	}
	b.StopTimer()
	empty := percentile(variants[0].lat, 0.5)
	for _, v := range variants {
		b.ReportMetric(percentile(v.lat, 0.5), v.name+"-p50-ms")
		if v.name != "empty" {
			b.ReportMetric(percentile(v.lat, 0.5)/empty, v.name+"/empty")
		}
	}
	b.ReportMetric(0, "ns/op")
}

// BenchmarkStandbyAnswer isolates the worker's part of a standby-served
// call: a lean worker is started as the server starts its standbys (same
// environment: sandbox, database opened ahead, memory limit, ready byte),
// and once it is ready the time runs from writing the request to reading
// the whole answer of a primary-key SELECT. What is left here is only what
// depends on the request.
func BenchmarkStandbyAnswer(b *testing.B) {
	db := filepath.Join(testDir(b), "standby.db")
	s := start(b, db)
	s.ok("write_query", q("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, price REAL, qty INTEGER, note TEXT)"))
	s.ok("write_query", q("INSERT INTO items VALUES (1, 'one', 1.5, 3, 'a note')"))
	env := ipc.WorkerEnv{
		Sandbox: &sandbox.Allowance{DB: db}, Preopen: db,
		Ready: true, FrontPID: os.Getpid(), MemoryMB: 256, Warm: true,
	}.Env(os.Environ())
	req := fmt.Sprintf(`{"v":%d,"op":"query","db":%q,"mode":"read","sql":"SELECT id, name, price, qty, note FROM items WHERE id = 1",`+
		`"caps":{"max_rows":1000,"max_result_bytes":32768,"max_cell_chars":2000,"max_update_rows":500},`+
		`"limits":{"timeout_ms":10000,"memory_mb":256,"max_growth_mb":512,"sandbox":true}}`, ipc.Version, db)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		cmd := exec.Command(workerBin)
		cmd.Env = env
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		out := bufio.NewReader(stdout)
		if c, err := out.ReadByte(); err != nil || c != ipc.ReadyByte {
			b.Fatalf("no ready byte: %q %v", c, err)
		}
		b.StartTimer()
		begin := time.Now()
		_, _ = io.WriteString(stdin, req)
		stdin.Close()
		resp, err := ipc.ReadResponse(out)
		lat = append(lat, time.Since(begin))
		b.StopTimer()
		if err != nil || !resp.OK {
			b.Fatalf("%v %+v", err, resp)
		}
		_, _ = io.Copy(io.Discard, out)
		_ = cmd.Wait()
		b.StartTimer()
	}
	b.StopTimer()
	reportPercentiles(b, lat)
	b.ReportMetric(0, "ns/op")
}

// rawPing sends an MCP ping through the session's transport and returns
// how long the answer took: the transport and the front, no tool. mcp-go's
// client.Ping sends nothing on a 2026-07-28 session, which removed ping;
// the server then answers METHOD_NOT_FOUND through the same path, which
// this accepts as well as the empty result of an older session.
func rawPing(t testing.TB, s *session, n int) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(fmt.Sprintf("ping-%d", n)), Method: string(mcp.MethodPing)}
	start := time.Now()
	resp, err := s.c.GetTransport().SendRequest(ctx, req)
	d := time.Since(start)
	if err != nil {
		t.Fatalf("ping: %v", err)
	}
	if resp.Error != nil && resp.Error.Code != mcp.METHOD_NOT_FOUND {
		t.Fatalf("ping answered %+v", resp.Error)
	}
	return d
}

// BenchmarkPrewake compares paced primary-key read_query calls to two
// servers of one file, called in turn: one nudges the standby as a
// tools/call line comes in (ipc.Spawner.Prewake, the default), the other
// does not (MCP_SQLITE_PREWAKE=0). Taken in turns, both see the same load.
//
//	go test -run '^$' -bench Prewake -benchtime 100x ./tests/
func BenchmarkPrewake(b *testing.B) {
	dir := testDir(b)
	db := filepath.Join(dir, "prewake.db")
	traces := []string{filepath.Join(dir, "on.jsonl"), filepath.Join(dir, "off.jsonl")}
	on := startEnv(b, db, []string{"MCP_SQLITE_CALLTRACE=" + traces[0]})
	itemsTable(on)
	off := startEnv(b, db, []string{"MCP_SQLITE_CALLTRACE=" + traces[1], "MCP_SQLITE_PREWAKE=0"})
	sessions := []*session{on, off}
	windows := make([][]window, 2)
	time.Sleep(time.Second) // the pools fill after start-up
	b.ResetTimer()
	for i := range b.N {
		for k, s := range sessions {
			windows[k] = append(windows[k], pacedRead(s, i))
		}
	}
	b.StopTimer()
	lat := [][]time.Duration{took(windows[0]), took(windows[1])}
	steps := []*callSteps{pacedSteps(b, traces[0], windows[0]), pacedSteps(b, traces[1], windows[1])}
	p50 := func(d []time.Duration) float64 { return percentile(d, 0.5) }
	b.ReportMetric(p50(lat[0]), "prewake-p50-ms")
	b.ReportMetric(p50(lat[1]), "none-p50-ms")
	b.ReportMetric(p50(lat[0])/p50(lat[1]), "prewake/none")
	b.ReportMetric(steps[0].p50("worker share"), "prewake-share-p50-ms")
	b.ReportMetric(steps[1].p50("worker share"), "none-share-p50-ms")
	if b.N > 1 {
		fmt.Fprintf(os.Stderr, "with the nudge:\n%swithout:\n%s", steps[0], steps[1])
	}
	b.ReportMetric(0, "ns/op")
}
