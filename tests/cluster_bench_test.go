package tests

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/cluster/rqlite"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/cluster/rqlitetest"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
)

// The cluster-mode benchmarks (SPEC 10 and 13), each against the
// single-file server in the same run, through the same clients:
//
//	go test -run '^$' -bench 'Cluster(Paced|Agents)' -benchtime 20x ./tests/
//
//	append-cluster/file   <= 3    (paced append_event, front beside node 0 of a 3-node loopback cluster, over stdio)
//	read-cluster/file     <= 1.5  (paced primary-key read_query, same front)
//	cluster-calls/s, file-calls/s (3 fronts x 8 HTTP agents, half appends; nothing lost)
//	cluster-raft-entries/append   (write requests per acknowledged append: lost races for the head show here)
//
// The paced benchmark also times, in the same rounds, the rqlite requests a
// cluster call is built on, straight through the project's client: a
// node's /status (what a read waits on before its worker runs), a
// linearizable read of the chain's head and a one-row write (an append is
// those two). The cluster elects its own leader, node 0 or not; the
// leader-node0 metric says whether it was, since a follower forwards
// every write and linearizable read to the leader (docs/performance.md
// gives the figures of both).

// BenchmarkClusterPaced: in each round, one paced append_event and one
// paced primary-key read_query to a cluster front (over stdio, beside node
// 0 of a 3-node loopback cluster) and the same to a single-file server,
// in turns; then the raw rqlite requests. Afterwards the chain verifies on
// both and every node holds every event.
func BenchmarkClusterPaced(b *testing.B) {
	cl := rqlitetest.Start(b, 3)
	dir := testDir(b)
	traces := []string{filepath.Join(dir, "cluster.jsonl"), filepath.Join(dir, "file.jsonl")}
	front := startFrontEnv(b, cl, 0, []string{"MCP_SQLITE_CALLTRACE=" + traces[0]})
	file := startEnv(b, filepath.Join(dir, "paced.db"), []string{"MCP_SQLITE_CALLTRACE=" + traces[1]})
	sessions := []*session{front, file}
	for _, s := range sessions {
		itemsTable(s)
	}
	raw, err := rqlite.New(cl.URLs(), rqlite.Options{Timeout: 30 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := raw.Execute(ctx, []rqlite.Statement{{SQL: "CREATE TABLE bench_raw (id INTEGER PRIMARY KEY, v TEXT)"}}); err != nil {
		b.Fatal(err)
	}
	leaderBefore := cl.Leader()

	appends := make([][]window, 2)
	reads := make([][]window, 2)
	var status, linearizable, execute []time.Duration
	timedRaw := func(f func() error) time.Duration {
		time.Sleep(pacedGap)
		start := time.Now()
		if err := f(); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	time.Sleep(time.Second) // the pools fill after start-up
	b.ResetTimer()
	for i := range b.N {
		for k, s := range sessions {
			appends[k] = append(appends[k], pacedAppend(s, fmt.Sprintf("paced event %d", i)))
		}
		for k, s := range sessions {
			reads[k] = append(reads[k], pacedRead(s, i))
		}
		status = append(status, timedRaw(func() error {
			_, err := raw.Status(ctx, cl.URL(0))
			return err
		}))
		linearizable = append(linearizable, timedRaw(func() error {
			_, err := raw.Query(ctx, []rqlite.Statement{{SQL: "SELECT id, hash FROM memory_events ORDER BY id DESC LIMIT 1"}}, rqlite.Linearizable)
			return err
		}))
		execute = append(execute, timedRaw(func() error {
			_, err := raw.Execute(ctx, []rqlite.Statement{{SQL: "INSERT INTO bench_raw (id, v) VALUES (?, ?)", Args: []any{int64(i), "a row of text"}}})
			return err
		}))
	}
	b.StopTimer()

	for _, s := range sessions {
		if v := s.verify(); !v.OK || v.Events != b.N {
			b.Fatalf("after %d appends: %+v", b.N, v)
		}
	}
	if n := sameOnEveryNode(b, cl, []int{0, 1, 2}, "SELECT count(*) FROM memory_events"); n != strconv.Itoa(b.N)+"\n" {
		b.Fatalf("the nodes hold %q events, want %d", n, b.N)
	}
	steps := []*callSteps{pacedSteps(b, traces[0], reads[0]), pacedSteps(b, traces[1], reads[1])}
	readTook := [][]time.Duration{took(reads[0]), took(reads[1])}
	appendTook := [][]time.Duration{took(appends[0]), took(appends[1])}
	p50 := func(d []time.Duration) float64 { return percentile(d, 0.5) }
	b.ReportMetric(p50(appendTook[0]), "append-cluster-p50-ms")
	b.ReportMetric(p50(appendTook[1]), "append-file-p50-ms")
	b.ReportMetric(p50(appendTook[0])/p50(appendTook[1]), "append-cluster/file")
	// The handler's share of an append: in cluster mode the head's read,
	// the plan and the write.
	b.ReportMetric(p50(handlerTimes(b, traces[0], "append_event", appends[0])), "append-cluster-handler-p50-ms")
	b.ReportMetric(p50(handlerTimes(b, traces[1], "append_event", appends[1])), "append-file-handler-p50-ms")
	b.ReportMetric(p50(readTook[0]), "read-cluster-p50-ms")
	b.ReportMetric(p50(readTook[1]), "read-file-p50-ms")
	b.ReportMetric(p50(readTook[0])/p50(readTook[1]), "read-cluster/file")
	b.ReportMetric(p50(status), "rqlite-status-p50-ms")
	b.ReportMetric(p50(linearizable), "rqlite-linearizable-p50-ms")
	b.ReportMetric(p50(execute), "rqlite-execute-p50-ms")
	// An append is a linearizable read of the head and one write: what
	// the front adds beyond those two is its own.
	b.ReportMetric(p50(appendTook[0])/(p50(linearizable)+p50(execute)), "append-cluster/rqlite-floor")
	// Before its worker runs, a cluster read waits for the local node to
	// have applied the front's last write (a /status request); the step
	// holds that wait.
	const waited = "handler (earlier audit rows written) -> worker taken"
	b.ReportMetric(steps[0].p50(waited), "read-cluster-before-worker-p50-ms")
	b.ReportMetric(steps[1].p50(waited), "read-file-before-worker-p50-ms")
	leader := 0.0
	if leaderBefore == 0 && cl.Leader() == 0 {
		leader = 1
	}
	b.ReportMetric(leader, "leader-node0")
	if b.N > 1 {
		fmt.Fprintf(os.Stderr, "paced primary-key read_query, p50 of each step over %d calls (ms)\ncluster front (node 0 leader: %v):\n%ssingle file:\n%s",
			b.N, leader == 1, steps[0], steps[1])
	}
	b.ReportMetric(0, "ns/op")
}

// pacedAppend waits pacedGap, then appends content through s: a paced
// append_event. It returns when the call was sent and its answer read.
func pacedAppend(s *session, content string) window {
	time.Sleep(pacedGap)
	sent := time.Now()
	s.ok("append_event", map[string]any{"content": content})
	return window{sent, time.Now()}
}

// handlerTimes returns, for each window, how long the handler of the
// traced call of tool the server read inside it ran.
func handlerTimes(t testing.TB, path, tool string, windows []window) []time.Duration {
	t.Helper()
	var calls []ipc.CallTrace
	waitFor(10*time.Second, func() bool {
		calls = readTrace(t, path)
		return len(windows) == 0 || (len(calls) > 0 && calls[len(calls)-1].Received >= windows[len(windows)-1].sent.UnixNano())
	})
	var d []time.Duration
	for _, w := range windows {
		found := false
		for _, c := range calls {
			r := time.Unix(0, c.Received)
			if c.Tool == tool && !r.Before(w.sent) && !r.After(w.received) {
				d = append(d, time.Duration(c.Returned-c.Handler))
				found = true
				break
			}
		}
		if !found {
			t.Fatalf("no traced %s between %v and %v in %s", tool, w.sent, w.received, path)
		}
	}
	return d
}

// startFrontEnv is startFront with env (KEY=value) added to the front's
// environment.
func startFrontEnv(t testing.TB, cl *rqlitetest.Cluster, i int, env []string, flags ...string) *session {
	t.Helper()
	args := append([]string{"--rqlite", strings.Join(cl.URLs(), ","), "--rqlite-data", cl.DataDir(i)}, flags...)
	node := filepath.Join(cl.DataDir(i), "db.sqlite")
	var cmd *exec.Cmd
	c, err := client.NewStdioMCPClientWithOptions(serverBin, env, args, trackServer(node, &cmd))
	if err != nil {
		t.Fatalf("start front: %v", err)
	}
	s := &session{t: t, c: c, cmd: cmd}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "e2e", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize a front beside node %d: %v", i, err)
	}
	return s
}

// nodeClient is an rqlite client of node i of cl alone.
func nodeClient(t testing.TB, cl *rqlitetest.Cluster, i int) *rqlite.Client {
	t.Helper()
	c, err := rqlite.New([]string{cl.URL(i)}, rqlite.Options{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// appendedRE reads an append_event answer's event id.
var appendedRE = regexp.MustCompile(`^ok: event (\d+) appended`)

// agentsRun is what a phase of BenchmarkClusterAgents measured.
type agentsRun struct {
	took           time.Duration
	reads, appends []time.Duration
	// acked maps each acknowledged event's id to its content.
	acked map[int]string
}

func (r *agentsRun) add(o agentsRun) {
	r.took += o.took
	r.reads = append(r.reads, o.reads...)
	r.appends = append(r.appends, o.appends...)
	if r.acked == nil {
		r.acked = map[int]string{}
	}
	for id, c := range o.acked {
		r.acked[id] = c
	}
}

func (r *agentsRun) calls() int { return len(r.reads) + len(r.appends) }

// runAgents has every client make calls calls one after the other, all
// clients at once, alternating a primary-key read_query and an
// append_event (content names the client, the phase and the call).
func runAgents(b *testing.B, clients []*session, phase string, calls int) agentsRun {
	var mu sync.Mutex
	run := agentsRun{acked: map[int]string{}}
	var wg sync.WaitGroup
	began := time.Now()
	for a, s := range clients {
		wg.Go(func() {
			for i := range calls {
				content := fmt.Sprintf("agent %d %s call %d", a, phase, i)
				start := time.Now()
				var text string
				var isErr bool
				read := (a+i)%2 == 0
				if read {
					text, isErr = s.call("read_query", q(fmt.Sprintf("SELECT name FROM items WHERE id = %d", (a*calls+i)%1000+1)))
				} else {
					text, isErr = s.call("append_event", map[string]any{"content": content})
				}
				d := time.Since(start)
				if isErr {
					b.Errorf("agent %d, %s: %s", a, phase, text)
					return
				}
				mu.Lock()
				if read {
					run.reads = append(run.reads, d)
				} else {
					m := appendedRE.FindStringSubmatch(text)
					if m == nil {
						mu.Unlock()
						b.Errorf("agent %d, %s: append answered %q", a, phase, text)
						return
					}
					id, _ := strconv.Atoi(m[1])
					run.appends = append(run.appends, d)
					run.acked[id] = content
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	run.took = time.Since(began)
	return run
}

// BenchmarkClusterAgents: 24 HTTP agents (half of each protocol
// generation), each with its own client and token, make b.N calls each,
// one after the other, half primary-key read_query and half append_event:
// once on three cluster fronts (8 agents on each, one front beside each
// node of a 3-node loopback cluster), once on one single-file server, in
// halves taken in turns (file, cluster, cluster, file) so both see the
// same machine load. calls/s over the run and p50/p99 per call; afterwards
// every acknowledged event is in its chain once, the chains verify, and
// every node holds the same chain.
func BenchmarkClusterAgents(b *testing.B) {
	const fronts, perFront = 3, 8
	cl := rqlitetest.Start(b, 3)
	names := make([]string, fronts*perFront)
	for i := range names {
		names[i] = fmt.Sprintf("agent%02d", i)
	}
	fileSrv := startHTTP(b, filepath.Join(testDir(b), "agents.db"), names)
	var clusterClients, fileClients []*session
	for i, n := range names {
		fileClients = append(fileClients, fileSrv.connect(b, n, i%2 == 1))
	}
	for f := range fronts {
		h := startClusterHTTP(b, cl, f, names[f*perFront:(f+1)*perFront])
		for i, n := range names[f*perFront : (f+1)*perFront] {
			clusterClients = append(clusterClients, h.connect(b, n, i%2 == 1))
		}
	}
	for _, s := range []*session{fileClients[0], clusterClients[0]} {
		s.ok("write_query", q("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT)"))
		s.ok("write_query", q("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000) INSERT INTO items SELECT x, 'item ' || x FROM c"))
	}
	all := []int{0, 1, 2}
	// Every front reads its own node's file: each must hold the table
	// before its agents read it (a follower may not have created it yet).
	if !waitFor(20*time.Second, func() bool {
		for i := range all {
			res, err := nodeClient(b, cl, i).Query(context.Background(), []rqlite.Statement{{SQL: "SELECT count(*) FROM items"}}, rqlite.None)
			if err != nil || len(res.Results[0].Values) != 1 || res.Results[0].Values[0][0] != int64(1000) {
				return false
			}
		}
		return true
	}) {
		b.Fatal("a node does not hold the 1,000 items after 20 s")
	}

	// Every write request is one Raft entry, whether it commits or its
	// guard fails it: the entries per call say how many requests the
	// fronts sent beyond one per append (lost races for the head, audit
	// batches of the reads).
	applied := func() uint64 {
		var most uint64
		for i := range all {
			if st, err := nodeClient(b, cl, i).Status(context.Background(), cl.URL(i)); err == nil {
				most = max(most, st.AppliedIndex)
			}
		}
		return most
	}
	var file, clustered agentsRun
	var entries uint64
	clusterPhase := func(phase string, calls int) {
		before := applied()
		clustered.add(runAgents(b, clusterClients, phase, calls))
		entries += applied() - before
	}
	first := (b.N + 1) / 2
	time.Sleep(time.Second) // the pools fill after start-up
	b.ResetTimer()
	file.add(runAgents(b, fileClients, "file-1", first))
	clusterPhase("cluster-1", first)
	if rest := b.N - first; rest > 0 {
		clusterPhase("cluster-2", rest)
		file.add(runAgents(b, fileClients, "file-2", rest))
	}
	b.StopTimer()
	if b.Failed() {
		return
	}

	if v := fileClients[0].verify(); !v.OK || v.Events != len(file.acked) {
		b.Fatalf("the file after the run: %+v, %d acknowledged appends", v, len(file.acked))
	}
	d := openDirect(b, fileSrv.db)
	for id, content := range file.acked {
		var n int
		if err := d.QueryRow(`SELECT count(*) FROM memory_events WHERE id = ? AND content = ?`, id, content).Scan(&n); err != nil || n != 1 {
			b.Fatalf("acknowledged event %d (%q) in the file: %d rows, %v", id, content, n, err)
		}
	}
	chain := sameOnEveryNode(b, cl, all, "SELECT id, hash, prev_hash FROM memory_events ORDER BY id")
	if n := strings.Count(chain, "\n"); n != len(clustered.acked) {
		b.Fatalf("the cluster holds %d events, %d acknowledged", n, len(clustered.acked))
	}
	for f := range fronts {
		if v := clusterClients[f*perFront].verify(); !v.OK || v.Events != len(clustered.acked) {
			b.Fatalf("the chain through front %d: %+v, %d acknowledged appends", f, v, len(clustered.acked))
		}
	}
	raw, err := rqlite.New(cl.URLs(), rqlite.Options{Timeout: 30 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	res, err := raw.Query(context.Background(), []rqlite.Statement{{SQL: "SELECT id, content FROM memory_events"}}, rqlite.Strong)
	if err != nil {
		b.Fatal(err)
	}
	for _, row := range res.Results[0].Values {
		id, _ := row[0].(int64)
		if content, ok := clustered.acked[int(id)]; !ok || content != row[1] {
			b.Fatalf("event %d in the cluster is %q, acknowledged %q (%v)", id, row[1], content, ok)
		}
	}

	rate := func(r agentsRun) float64 { return float64(r.calls()) / r.took.Seconds() }
	both := func(r agentsRun) []time.Duration {
		return append(append([]time.Duration(nil), r.reads...), r.appends...)
	}
	b.ReportMetric(rate(clustered), "cluster-calls/s")
	b.ReportMetric(rate(file), "file-calls/s")
	b.ReportMetric(rate(clustered)/rate(file), "calls/s-cluster/file")
	b.ReportMetric(percentile(both(clustered), 0.5), "cluster-p50-ms")
	b.ReportMetric(percentile(both(clustered), 0.99), "cluster-p99-ms")
	b.ReportMetric(percentile(both(file), 0.5), "file-p50-ms")
	b.ReportMetric(percentile(both(file), 0.99), "file-p99-ms")
	b.ReportMetric(percentile(clustered.appends, 0.5), "cluster-append-p50-ms")
	b.ReportMetric(percentile(clustered.reads, 0.5), "cluster-read-p50-ms")
	b.ReportMetric(percentile(file.appends, 0.5), "file-append-p50-ms")
	b.ReportMetric(percentile(file.reads, 0.5), "file-read-p50-ms")
	b.ReportMetric(float64(entries)/float64(len(clustered.appends)), "cluster-raft-entries/append")
	b.ReportMetric(0, "ns/op")
}
