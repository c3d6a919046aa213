package tests

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
)

// window is when a client sent a call and read its answer.
type window struct{ sent, received time.Time }

// readTrace reads the calls a server traced (MCP_SQLITE_CALLTRACE).
func readTrace(t testing.TB, path string) []ipc.CallTrace {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("call trace: %v", err)
	}
	defer f.Close()
	var calls []ipc.CallTrace
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var c ipc.CallTrace
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("call trace line %q: %v", sc.Text(), err)
		}
		calls = append(calls, c)
	}
	return calls
}

// stepNames are a worker call's steps, in order, as the breakdown prints
// them; each runs from the stamp before to its own.
var stepNames = []string{
	"client writes -> front reads the line",
	"line read -> the read loop dispatches it",
	"dispatched -> its goroutine runs",
	"goroutine runs -> mcp-go calls the tool's handler",
	"handler (earlier audit rows written) -> worker taken",
	"worker taken -> request handed off",
	"handed off -> worker has read it (write + wake-up)",
	"worker decodes the request",
	"worker checks it against its sandbox",
	"worker sets the request's limits",
	"worker readies the connection and policy",
	"worker compiles the statement",
	"worker steps and renders the rows",
	"worker builds the response",
	"worker writes -> front has read the answer (write + wake-up)",
	"answer back -> handler queues the audit row",
	"the audit row is queued (the reply does not wait for it)",
	"handler returns -> its reply's write begins",
	"reply's write begins -> client has read it",
}

// callSteps is the duration of each step of many calls, and their sums.
type callSteps struct {
	each  [][]time.Duration // by step, one per call
	share []time.Duration   // handed off -> answer back
	total []time.Duration   // client writes -> client reads
	// faults are the page faults the worker took on the request's path.
	faults []time.Duration
	// woke and rewarm are, for prewoken calls, the front's nudge to the
	// worker awake, and its warm-up.
	woke, rewarm []time.Duration
}

// pacedSteps matches each client window with the traced read_query call
// the server read inside it, and splits it into steps.
func pacedSteps(t testing.TB, path string, windows []window) *callSteps {
	t.Helper()
	// A call's line is written once its reply is: the client may have
	// read the last reply before the server wrote the last line.
	var calls []ipc.CallTrace
	waitFor(10*time.Second, func() bool {
		calls = readTrace(t, path)
		return len(windows) == 0 || (len(calls) > 0 && calls[len(calls)-1].Received >= windows[len(windows)-1].sent.UnixNano())
	})
	s := &callSteps{each: make([][]time.Duration, len(stepNames))}
	for _, w := range windows {
		var c *ipc.CallTrace
		for i := range calls {
			r := time.Unix(0, calls[i].Received)
			if calls[i].Tool == "read_query" && !r.Before(w.sent) && !r.After(w.received) {
				c = &calls[i]
				break
			}
		}
		if c == nil || c.Worker == nil {
			t.Fatalf("no traced read_query with worker stamps between %v and %v in %s", w.sent, w.received, path)
		}
		k := c.Worker
		stamps := []int64{
			w.sent.UnixNano(), c.Received, c.Dispatched, c.Running, c.Handler, c.Taken, c.HandedOff,
			k.Read, k.Decoded, k.Admitted, k.Limited, k.Ready, k.Compiled, k.Stepped, k.Answered,
			c.Back, c.Auditing, c.Returned, c.Written, w.received.UnixNano(),
		}
		for i := range stepNames {
			s.each[i] = append(s.each[i], time.Duration(stamps[i+1]-stamps[i]))
		}
		s.share = append(s.share, time.Duration(c.Back-c.HandedOff))
		s.faults = append(s.faults, time.Duration(k.Faults)*time.Millisecond)
		if c.Prewoken != 0 && k.Woken != 0 {
			s.woke = append(s.woke, time.Duration(k.Woken-c.Prewoken))
			s.rewarm = append(s.rewarm, time.Duration(k.Rewarmed-k.Woken))
		}
		s.total = append(s.total, w.received.Sub(w.sent))
	}
	return s
}

// p50 returns the median of what named ("worker share", "total" or a step), in ms.
func (s *callSteps) p50(name string) float64 {
	switch name {
	case "worker share":
		return percentile(s.share, 0.5)
	case "total":
		return percentile(s.total, 0.5)
	}
	for i, n := range stepNames {
		if n == name {
			return percentile(s.each[i], 0.5)
		}
	}
	return 0
}

func (s *callSteps) String() string {
	var b strings.Builder
	for i, n := range stepNames {
		fmt.Fprintf(&b, "  %-62s %6.3f\n", n, percentile(s.each[i], 0.5))
	}
	fmt.Fprintf(&b, "  %-62s %6.3f\n", "worker share (handed off -> answer back)", s.p50("worker share"))
	fmt.Fprintf(&b, "  %-62s %6.3f (p25 %.3f, p75 %.3f, mean %.3f)\n", "the call, as the client saw it", s.p50("total"),
		percentile(s.total, 0.25), percentile(s.total, 0.75), mean(s.total))
	fmt.Fprintf(&b, "  %-62s %6.3f (mean %.3f)\n", "worker share, again", s.p50("worker share"), mean(s.share))
	fmt.Fprintf(&b, "  %-62s %6.0f\n", "page faults in the worker, read to answer (count)", percentile(s.faults, 0.5))
	fmt.Fprintf(&b, "  %d of %d calls prewoken: nudge -> worker awake %.3f, its warm-up %.3f\n", len(s.woke), len(s.share), percentile(s.woke, 0.5), percentile(s.rewarm, 0.5))
	return b.String()
}

// TestCallTrace: with MCP_SQLITE_CALLTRACE the server writes one line per
// tool call, and a worker call's stamps come in the order of its steps,
// front and worker on the same clock.
func TestCallTrace(t *testing.T) {
	t.Parallel()
	dir := testDir(t)
	trace := filepath.Join(dir, "calls.jsonl")
	s := startEnv(t, filepath.Join(dir, "memory.db"), []string{"MCP_SQLITE_CALLTRACE=" + trace})
	s.ok("write_query", q("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)"))
	s.ok("write_query", q("INSERT INTO t VALUES (1, 'one')"))
	sent := time.Now()
	s.ok("read_query", q("SELECT v FROM t WHERE id = 1"))
	w := window{sent, time.Now()}
	s.ok("verify_chain", nil)

	var calls []ipc.CallTrace
	waitFor(10*time.Second, func() bool { calls = readTrace(t, trace); return len(calls) >= 4 })
	if len(calls) != 4 {
		t.Fatalf("%d traced calls, want 4: %+v", len(calls), calls)
	}
	if c := calls[3]; c.Tool != "verify_chain" || c.Worker != nil || c.HandedOff != 0 || c.Returned < c.Handler || c.Written < c.Returned {
		t.Errorf("verify_chain's trace: %+v", c)
	}
	steps := pacedSteps(t, trace, []window{w})
	for i, n := range stepNames {
		if d := steps.each[i][0]; d < 0 {
			t.Errorf("step %q took %v: stamps out of order", n, d)
		}
	}
	if share := steps.share[0]; share <= 0 || share > steps.total[0] {
		t.Errorf("worker share %v of a call of %v", share, steps.total[0])
	}
	// The nudge: a read_query finds its standby nudged and woken before
	// the request (a standby may still be starting on a busy machine, so
	// a few paced tries).
	nudged := false
	for try := 0; try < 10 && !nudged; try++ {
		time.Sleep(200 * time.Millisecond)
		sent := time.Now()
		s.ok("read_query", q("SELECT v FROM t WHERE id = 1"))
		st := pacedSteps(t, trace, []window{{sent, time.Now()}})
		nudged = len(st.woke) == 1
	}
	if !nudged {
		t.Errorf("no read_query of 10 found its worker nudged and woken (ipc.Spawner.Prewake)")
	}
	sort.Slice(calls, func(i, j int) bool { return calls[i].Received < calls[j].Received })
	if calls[2].Tool != "read_query" || calls[2].Worker.Compiled == 0 || calls[2].Worker.Stepped == 0 {
		t.Errorf("read_query's trace: %+v %+v", calls[2], calls[2].Worker)
	}
}

// mean returns the mean of d in milliseconds.
func mean(d []time.Duration) float64 {
	if len(d) == 0 {
		return 0
	}
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	return float64((sum / time.Duration(len(d))).Microseconds()) / 1000
}
