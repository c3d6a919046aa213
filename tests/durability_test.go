package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestAcknowledgedWritesAreSynced proves SPEC 5's durability promise by the
// system calls: the server and its workers run under strace during a short
// session, and for every acknowledged append_event, checkpoint, write_query
// and destructive_query the trace must show, between the previous answer on
// the server's stdout and this call's answer, a write to the database's WAL
// by the committing process (the server, or a worker for an agent's
// statement) followed by that process's fsync or fdatasync of the WAL,
// returning before the answer is written. With synchronous=NORMAL a commit
// writes the WAL and syncs nothing (SQLite syncs only when the WAL restarts
// and at checkpoints), so the test fails: for every call with NORMAL on the
// memory connections, for every agent write with NORMAL in the worker.
func TestAcknowledgedWritesAreSynced(t *testing.T) {
	t.Parallel()
	strace := straceOrSkip(t)
	dir := testDir(t)
	db := filepath.Join(dir, "memory.db")
	trace := filepath.Join(dir, "trace.txt")
	s, logs := startCommand(t, db, strace, append(slices.Clone(straceArgs), "-o", trace, serverBin, "--db", db)...)

	// Every answer that says something was written, in call order.
	var acked []answer
	ack := func(tool string, args map[string]any) {
		text := s.ok(tool, args)
		if !strings.HasPrefix(text, "ok: ") {
			t.Fatalf("%s: %q is not an acknowledgement", tool, bounded(text))
		}
		acked = append(acked, answer{tool, text})
	}
	ack("write_query", q("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)"))
	for i := 1; i <= 3; i++ {
		ack("append_event", map[string]any{"content": fmt.Sprintf("durable event %d", i)})
		ack("write_query", q(fmt.Sprintf("INSERT INTO notes (body) VALUES ('note %d')", i)))
		ack("checkpoint", map[string]any{"summary": fmt.Sprintf("after step %d", i)})
	}
	ack("destructive_query", map[string]any{"query": "DELETE FROM notes WHERE id = 1", "reason": "the durability test"})
	// Closing the client closes the server's stdin and waits for strace
	// to end with it, so the trace is complete. (The client closes the
	// server's stderr first, so the server's last log line may end it with
	// SIGPIPE: its exit status says nothing here.)
	_ = s.c.Close()

	data, err := os.ReadFile(trace)
	if err != nil {
		t.Fatalf("read trace: %v\nserver log:\n%s", err, bounded(logs.String()))
	}
	events := parseTrace(string(data))
	if problems := checkSynced(events, db+"-wal", acked); len(problems) > 0 {
		t.Errorf("acknowledged writes not synced before their answer (trace %d bytes, %d events):\n%s",
			len(data), len(events), strings.Join(problems, "\n"))
	}
}

// straceArgs trace, across the server and its workers (-f), the writes,
// the syncs and the thread and process starts (to tell the server's
// threads from a worker's), with each descriptor's path (-y).
var straceArgs = []string{"-f", "-y", "-tt", "-s", "2048",
	"-e", "trace=write,pwrite64,pwritev,pwritev2,fsync,fdatasync,clone,clone3,fork,vfork"}

// straceOrSkip returns strace's path, or skips the test where it cannot
// trace (not Linux, not installed, ptrace not permitted).
func straceOrSkip(t *testing.T) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the system-call proof needs strace, which is Linux-only")
	}
	path, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace is not installed (apt-get install strace); .ci/run installs it")
	}
	if out, err := exec.Command(path, append(slices.Clone(straceArgs), "-o", os.DevNull, "true")...).CombinedOutput(); err != nil {
		t.Skipf("strace cannot trace here (ptrace refused? a container without CAP_SYS_PTRACE): %v: %s", err, bounded(string(out)))
	}
	return path
}

// traceEvent is one system call of interest, with the thread that made it
// and the lines of the trace where it started and returned (a call
// interrupted by another thread's is split across two lines).
type traceEvent struct {
	tid        string
	name       string // write, pwrite64, fsync, clone, ...
	fd, path   string // the descriptor and its target as strace -y prints it
	data       string // the rest of the arguments: the first bytes written
	start, end int
	// For clone and the like: the new thread's or process's id, and
	// whether it is a thread of the caller's process (CLONE_THREAD).
	child  string
	thread bool
}

var (
	traceLine    = regexp.MustCompile(`^(\d+)\s+\S+\s+(.*)$`)
	traceFile    = regexp.MustCompile(`^(\w+)\((\d+)<([^>]*)>(.*)$`)
	traceSpawn   = regexp.MustCompile(`^(clone3?|fork|vfork)\(`)
	traceResumed = regexp.MustCompile(`^<\.\.\. (\w+) resumed>`)
	traceReturn  = regexp.MustCompile(`= (\d+)$`)
)

// parseTrace reads strace -f -y -tt output into the calls of interest, in
// the order they started.
func parseTrace(text string) []traceEvent {
	var events []traceEvent
	pending := map[string]int{} // thread -> index into events
	for i, line := range strings.Split(text, "\n") {
		m := traceLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		tid, rest := m[1], m[2]
		if r := traceResumed.FindStringSubmatch(rest); r != nil {
			if k, ok := pending[tid]; ok && events[k].name == r[1] {
				events[k].end = i
				if ret := traceReturn.FindStringSubmatch(rest); ret != nil {
					events[k].child = ret[1]
				}
				delete(pending, tid)
			}
			continue
		}
		e := traceEvent{tid: tid, start: i, end: i}
		if c := traceFile.FindStringSubmatch(rest); c != nil {
			e.name, e.fd, e.path, e.data = c[1], c[2], c[3], c[4]
		} else if c := traceSpawn.FindStringSubmatch(rest); c != nil {
			e.name, e.thread = c[1], strings.Contains(rest, "CLONE_THREAD")
			if ret := traceReturn.FindStringSubmatch(rest); ret != nil {
				e.child = ret[1]
			}
		} else {
			continue
		}
		events = append(events, e)
		if strings.HasSuffix(rest, "<unfinished ...>") {
			pending[tid] = len(events) - 1
		}
	}
	return events
}

// traceProcesses maps every thread of the trace to its process (the id of the
// process's first thread), following clone's CLONE_THREAD.
func traceProcesses(events []traceEvent) func(tid string) string {
	parent := map[string]string{} // thread -> the thread that created it, for threads only
	for _, e := range events {
		if e.child != "" && e.thread {
			parent[e.child] = e.tid
		}
	}
	return func(tid string) string {
		for p, ok := parent[tid]; ok; p, ok = parent[tid] {
			tid = p
		}
		return tid
	}
}

// answer is one acknowledged call: its tool and the text it answered.
type answer struct{ tool, text string }

// checkSynced checks each acknowledged answer against the trace. Between
// the previous answer on the server's stdout and this one, the process
// that commits the call's write must have written the WAL and then synced
// it, the sync returning before the answer's write began: the server for
// append_event and checkpoint, a worker for an agent's statement. (An
// fsync by another process would flush the file too, but would prove
// nothing about the committer's setting.) It returns one line per answer
// that fails.
func checkSynced(events []traceEvent, wal string, acked []answer) []string {
	proc := traceProcesses(events)
	// The server's stdout is the pipe its first JSON-RPC answer (to
	// initialize) went to; workers answer the server on pipes of their own.
	stdout, front := "", ""
	var answers []traceEvent
	for _, e := range events {
		if !strings.HasPrefix(e.path, "pipe:") || !isWrite(e.name) || !strings.Contains(e.data, `\"jsonrpc\":\"2.0\"`) {
			continue
		}
		if stdout == "" {
			stdout, front = e.path, proc(e.tid)
		}
		if e.path == stdout && e.fd == "1" {
			answers = append(answers, e)
		}
	}
	if len(answers) == 0 {
		return []string{"no JSON-RPC answer on the server's stdout in the trace"}
	}
	var problems []string
	for _, a := range acked {
		// An answer's text is JSON-quoted, then strace-quoted; the texts
		// checked here have no quotes or backslashes to escape.
		k := slices.IndexFunc(answers, func(e traceEvent) bool { return strings.Contains(e.data, a.text) })
		switch {
		case k < 0:
			problems = append(problems, fmt.Sprintf("%s %q: its answer is not in the trace", a.tool, a.text))
			continue
		case k == 0:
			problems = append(problems, fmt.Sprintf("%s %q: answered before initialize", a.tool, a.text))
			continue
		}
		byServer := a.tool == "append_event" || a.tool == "checkpoint"
		committer, who := func(p string) bool { return p == front }, "the server"
		if !byServer {
			committer, who = func(p string) bool { return p != front }, "a worker"
		}
		from, to := answers[k-1].start, answers[k].start
		firstWrite, synced := -1, false
		for _, e := range events {
			if e.start <= from || e.start >= to || e.path != wal || !committer(proc(e.tid)) {
				continue
			}
			switch {
			case isWrite(e.name) && firstWrite < 0:
				firstWrite = e.start
			case isSync(e.name) && firstWrite >= 0 && e.end < to:
				synced = true
			}
		}
		switch {
		case firstWrite < 0:
			problems = append(problems, fmt.Sprintf("%s %q: %s did not write %s between the previous answer (trace line %d) and this one (line %d)", a.tool, a.text, who, filepath.Base(wal), from+1, to+1))
		case !synced:
			problems = append(problems, fmt.Sprintf("%s %q: %s wrote %s (line %d) but did not sync it before the answer (line %d)", a.tool, a.text, who, filepath.Base(wal), firstWrite+1, to+1))
		}
	}
	return problems
}

func isWrite(name string) bool {
	return strings.HasPrefix(name, "write") || strings.HasPrefix(name, "pwrite")
}

func isSync(name string) bool { return name == "fsync" || name == "fdatasync" }
