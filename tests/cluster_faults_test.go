package tests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/cluster/rqlite"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/cluster/rqlitetest"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/memory"
)

// Cluster mode under faults and concurrency (issue 45): every test runs
// real 3-node loopback clusters and fronts over stdio; docs/cluster.md's
// "Faults" section holds what they measured.

// tryCall runs one tool call and returns its text, whether it is a tool
// error, and a transport error; safe from any goroutine (no t.Fatal).
func tryCall(s *session, limit time.Duration, tool string, args map[string]any) (string, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := s.c.CallTool(ctx, req)
	if err != nil {
		return "", false, err
	}
	var parts []string
	for _, c := range res.Content {
		if tc, ok := mcp.AsTextContent(c); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n"), res.IsError, nil
}

// appender appends distinct contents through one front as a client
// should: a call answered DATABASE_UNAVAILABLE with "nothing was written"
// is sent again; one whose outcome is unknown is looked for first (as its
// message says) and sent again only when it is not there.
type appender struct {
	s      *session
	prefix string
	// acked are the contents the front acknowledged (or that were found
	// after an unknown outcome); retried counts calls sent again.
	mu      sync.Mutex
	acked   []string
	retried int
	unknown int
}

func (a *appender) ack(content string) {
	a.mu.Lock()
	a.acked = append(a.acked, content)
	a.mu.Unlock()
}

func (a *appender) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.acked)
}

// one appends content until acknowledged (bounded by limit).
func (a *appender) one(content string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		text, isErr, err := tryCall(a.s, 60*time.Second, "append_event", map[string]any{"content": content})
		if err != nil {
			return fmt.Errorf("append %s: %w", content, err)
		}
		if !isErr {
			if !strings.HasPrefix(text, "ok: event ") {
				return fmt.Errorf("append %s answered %q", content, text)
			}
			a.ack(content)
			return nil
		}
		if !strings.HasPrefix(text, "DATABASE_UNAVAILABLE: ") {
			return fmt.Errorf("append %s failed: %s", content, text)
		}
		a.mu.Lock()
		a.retried++
		a.mu.Unlock()
		if strings.Contains(text, "may or may not") {
			a.mu.Lock()
			a.unknown++
			a.mu.Unlock()
			found, err := a.landed(content, deadline)
			if err != nil {
				return err
			}
			if found {
				a.ack(content)
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("append %s: not acknowledged within %s", content, limit)
}

// landed asks the front, until it answers, whether content is in the chain.
func (a *appender) landed(content string, deadline time.Time) (bool, error) {
	query := "SELECT count(*) AS n FROM memory_events WHERE content = '" + content + "'"
	for time.Now().Before(deadline) {
		text, isErr, err := tryCall(a.s, 60*time.Second, "read_query", q(query))
		if err != nil {
			return false, err
		}
		if !isErr {
			return strings.HasPrefix(text, "n\n1\n"), nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return false, errors.New("the front did not answer whether " + content + " landed")
}

// checkContents fails unless every node in nodes holds each acknowledged
// content exactly once and no content twice; it returns how many events
// the chain holds.
func checkContents(t *testing.T, cl *rqlitetest.Cluster, nodes []int, acked []string) int {
	t.Helper()
	all := sameOnEveryNode(t, cl, nodes, "SELECT id, hash, prev_hash FROM memory_events ORDER BY id")
	events := strings.Count(all, "\n")
	if twice := nodeRows(t, cl, nodes[0], "SELECT content, count(*) FROM memory_events GROUP BY content HAVING count(*) > 1"); twice != "" {
		t.Fatalf("contents appended more than once: %s", tail(twice, 400))
	}
	have := map[string]bool{}
	for _, line := range strings.Split(nodeRows(t, cl, nodes[0], "SELECT content FROM memory_events"), "\n") {
		have[line] = true
	}
	for _, c := range acked {
		if !have[c] {
			t.Errorf("acknowledged %q is not in the cluster", c)
		}
	}
	return events
}

// verified calls verify_chain and fails unless it says the chain of
// events is intact.
func verified(t *testing.T, s *session, events int) {
	t.Helper()
	got := s.ok("verify_chain", nil)
	if !strings.Contains(got, `"ok": true`) || !strings.Contains(got, fmt.Sprintf(`"events": %d`, events)) {
		t.Fatalf("verify_chain: %s (want %d events)", got, events)
	}
}

// TestClusterThreeFrontsAppend: three fronts, one per node, append 300
// events each at once (three clients per front): one chain of 900 that
// verifies on every front, every node holding the same ids and hashes,
// each content once.
func TestClusterThreeFrontsAppend(t *testing.T) {
	t.Parallel()
	const perFront, clients = 300, 3
	cl := rqlitetest.Start(t, 3)
	fronts := []*session{startFront(t, cl, 0), startFront(t, cl, 1), startFront(t, cl, 2)}
	var apps []*appender
	var wg sync.WaitGroup
	errs := make(chan error, len(fronts)*clients)
	start := time.Now()
	for f, s := range fronts {
		for k := range clients {
			a := &appender{s: s, prefix: fmt.Sprintf("f%d-c%d", f, k)}
			apps = append(apps, a)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range perFront / clients {
					if err := a.one(fmt.Sprintf("%s-%d", a.prefix, i), 60*time.Second); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	took := time.Since(start)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var acked []string
	retried := 0
	for _, a := range apps {
		acked = append(acked, a.acked...)
		retried += a.retried
	}
	total := len(fronts) * perFront
	t.Logf("%d appends through 3 fronts in %s: %.0f appends/s (%d calls sent again)", total, took.Round(time.Millisecond), float64(total)/took.Seconds(), retried)
	if len(acked) != total {
		t.Fatalf("%d appends acknowledged, want %d", len(acked), total)
	}
	if n := checkContents(t, cl, []int{0, 1, 2}, acked); n != total {
		t.Fatalf("the chain holds %d events, want %d", n, total)
	}
	for _, s := range fronts {
		verified(t, s, total)
	}
	out, err := exec.Command(serverBin, "verify", "--rqlite", strings.Join(cl.URLs(), ",")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), fmt.Sprintf(`"events": %d`, total)) {
		t.Fatalf("verify --rqlite: %v\n%s", err, out)
	}
}

// TestClusterLeaderKilledMidAppends kills -9 the leader while three
// fronts append: appends go on after the election; every acknowledged
// event is in the cluster once; the chain verifies on the survivors and,
// after the node is back, on all three. The front beside the killed node
// cannot read (DATABASE_UNAVAILABLE, bounded) until its node is back.
func TestClusterLeaderKilledMidAppends(t *testing.T) {
	t.Parallel()
	const perFront, qt = 60, 2
	cl := rqlitetest.Start(t, 3)
	var fronts []*session
	for i := range 3 {
		fronts = append(fronts, startFront(t, cl, i, "--query-timeout", fmt.Sprint(qt)))
	}
	leader := cl.Leader()
	if leader < 0 {
		t.Fatal("no leader")
	}
	var apps []*appender
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for f, s := range fronts {
		a := &appender{s: s, prefix: fmt.Sprintf("f%d", f)}
		apps = append(apps, a)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perFront {
				if err := a.one(fmt.Sprintf("%s-%d", a.prefix, i), 90*time.Second); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	acked := func() int {
		n := 0
		for _, a := range apps {
			n += a.count()
		}
		return n
	}
	if !waitFor(120*time.Second, func() bool { return acked() >= perFront }) {
		t.Fatalf("only %d appends acknowledged before the kill", acked())
	}
	before := acked()
	killed := time.Now()
	cl.Kill(leader)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var all []string
	retried, unknown := 0, 0
	for _, a := range apps {
		all = append(all, a.acked...)
		retried += a.retried
		unknown += a.unknown
	}
	t.Logf("killed node %d (the leader) after %d of %d appends; all acknowledged %s after the kill; %d calls answered DATABASE_UNAVAILABLE and were sent again (%d of unknown outcome)",
		leader, before, 3*perFront, time.Since(killed).Round(time.Millisecond), retried, unknown)
	if len(all) != 3*perFront {
		t.Fatalf("%d acknowledged, want %d", len(all), 3*perFront)
	}
	var survivors []int
	for i := range 3 {
		if i != leader {
			survivors = append(survivors, i)
		}
	}
	n := checkContents(t, cl, survivors, all)
	if n != 3*perFront {
		t.Fatalf("the chain holds %d events, want %d", n, 3*perFront)
	}
	for _, i := range survivors {
		verified(t, fronts[i], n)
	}

	// The front beside the killed node lost its node's file: its reads
	// fail, bounded, saying so; it still writes through the others.
	orphan := fronts[leader]
	for _, tool := range []string{"verify_chain", "read_query"} {
		args := map[string]any{}
		if tool == "read_query" {
			args = q("SELECT count(*) FROM memory_events")
		}
		began := time.Now()
		text := orphan.fails(tool, args, "DATABASE_UNAVAILABLE")
		took := time.Since(began)
		t.Logf("%s beside the killed node: DATABASE_UNAVAILABLE after %s: %s", tool, took.Round(time.Millisecond), firstLine(text))
		if limit := time.Duration(qt)*time.Second + 5*time.Second + 5*time.Second; took > limit {
			t.Errorf("%s took %s to fail, more than %s", tool, took, limit)
		}
		if !strings.Contains(text, "does not answer") {
			t.Errorf("%s: the error should say the node beside the server does not answer: %s", tool, text)
		}
	}
	a := &appender{s: orphan, prefix: "orphan"}
	if err := a.one("orphan-0", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	all = append(all, a.acked...)

	// Back: the killed node catches up and its front serves again without
	// being restarted.
	back := time.Now()
	cl.Restart(leader)
	if !waitFor(60*time.Second, func() bool {
		text, isErr, err := tryCall(orphan, 60*time.Second, "verify_chain", nil)
		return err == nil && !isErr && strings.Contains(text, `"ok": true`)
	}) {
		t.Fatal("the front beside the restarted node does not read again")
	}
	t.Logf("the front beside the restarted node read again %s after Restart began", time.Since(back).Round(time.Millisecond))
	n = checkContents(t, cl, []int{0, 1, 2}, all)
	for _, s := range fronts {
		verified(t, s, n)
	}
}

// TestClusterFrontKilledMidCall kills -9 a front while it writes: nothing
// it acknowledged is lost, the call in flight landed at most once, and a
// new front on the same node serves on.
func TestClusterFrontKilledMidCall(t *testing.T) {
	t.Parallel()
	cl := rqlitetest.Start(t, 3)
	s := startFront(t, cl, 0)
	s.ok("write_query", q("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)"))
	a := &appender{s: s, prefix: "a"}
	var notes atomic.Int64 // notes acknowledged, in order 0..n-1
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if i%2 == 0 {
				if a.one(fmt.Sprintf("a-%d", i/2), 30*time.Second) != nil {
					return
				}
				continue
			}
			text, isErr, err := tryCall(s, 30*time.Second, "write_query", q(fmt.Sprintf("INSERT INTO notes (id, body) VALUES (%d, 'n')", notes.Load())))
			if err != nil || isErr || !strings.HasPrefix(text, "ok: 1 rows affected") {
				return
			}
			notes.Add(1)
		}
	}()
	if !waitFor(60*time.Second, func() bool { return a.count() >= 15 }) {
		t.Fatalf("only %d appends before the kill", a.count())
	}
	if err := s.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	close(stop)
	<-done
	acked := slices.Clone(a.acked)
	t.Logf("front killed after %d appends and %d inserts acknowledged", len(acked), notes.Load())

	s2 := startFront(t, cl, 0)
	n := checkContents(t, cl, []int{0, 1, 2}, acked)
	if n < len(acked) || n > len(acked)+1 {
		t.Fatalf("the chain holds %d events for %d acknowledged (at most one more: the call in flight)", n, len(acked))
	}
	rows := sameOnEveryNode(t, cl, []int{0, 1, 2}, "SELECT count(*), coalesce(max(id), -1) FROM notes")
	var count, maxID int64
	fmt.Sscan(rows, &count, &maxID)
	if count < notes.Load() || count > notes.Load()+1 || maxID != count-1 {
		t.Fatalf("notes: %q for %d acknowledged inserts", rows, notes.Load())
	}
	verified(t, s2, n)
	s2.ok("append_event", map[string]any{"content": "after the front was killed"})
	s2.ok("write_query", q("INSERT INTO notes (id, body) VALUES (100000, 'after')"))
	if got := s2.ok("read_query", q("SELECT body FROM notes WHERE id = 100000")); !strings.HasPrefix(got, "body\nafter\n") {
		t.Fatalf("read after the restart: %q", got)
	}
	verified(t, s2, n+1)
}

// TestClusterNoLeader: with one node down the others serve on; with two
// of three killed every kind of call answers DATABASE_UNAVAILABLE, saying
// what to do, within --query-timeout plus a few seconds, never ok; once a
// majority is back the same front serves again and nothing acknowledged
// is lost.
func TestClusterNoLeader(t *testing.T) {
	t.Parallel()
	const qt = 2
	cl := rqlitetest.Start(t, 3)
	s := startFront(t, cl, 0, "--query-timeout", fmt.Sprint(qt))
	s.ok("write_query", q("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)"))
	s.ok("write_query", q("INSERT INTO notes (body) VALUES ('before')"))
	s.ok("append_event", map[string]any{"content": "before the faults"})

	// Every kind of call, sent until it answers ok (bounded).
	calls := []struct {
		tool string
		args func(i int) map[string]any
		want string
	}{
		// The note's id makes a write sent again after an unknown outcome
		// fail rather than land twice.
		{"write_query", func(i int) map[string]any {
			return q(fmt.Sprintf("INSERT INTO notes (id, body) VALUES (%d, 'w%d')", 1000+i, i))
		}, "ok: 1 rows affected"},
		{"append_event", nil, ""},
		{"read_query", func(int) map[string]any { return q("SELECT count(*) AS n FROM notes") }, "n\n"},
		{"get_resume_context", func(int) map[string]any { return map[string]any{} }, ""},
	}
	var ackedNotes, ackedEvents []string
	serve := func(round int, limit time.Duration) time.Duration {
		t.Helper()
		began := time.Now()
		for _, c := range calls {
			if c.tool == "append_event" {
				// Sent again as a client should (appender.one).
				if err := (&appender{s: s}).one(fmt.Sprintf("e%d", round), limit); err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				continue
			}
			var text string
			if !waitFor(limit, func() bool {
				var isErr bool
				var err error
				text, isErr, err = tryCall(s, 60*time.Second, c.tool, c.args(round))
				if c.tool == "write_query" && isErr && strings.Contains(text, "UNIQUE constraint failed") {
					return true // it landed before, with an unknown outcome
				}
				return err == nil && !isErr && strings.Contains(text, c.want)
			}) {
				t.Fatalf("round %d: %s does not serve: %s", round, c.tool, text)
			}
		}
		ackedNotes = append(ackedNotes, fmt.Sprintf("w%d", round))
		ackedEvents = append(ackedEvents, fmt.Sprintf("e%d", round))
		return time.Since(began)
	}
	serve(0, 30*time.Second)

	// One node down (a follower other than the front's): the others serve.
	down := 2
	if cl.Leader() == 2 {
		down = 1
	}
	cl.Kill(down)
	t.Logf("one node down: every call served in %s", serve(1, 30*time.Second).Round(time.Millisecond))

	// Two of three down: no majority, no leader.
	other := 3 - down // the nodes are 0, 1, 2; the front's is 0
	cl.Kill(other)
	lost := time.Now()
	if !waitFor(30*time.Second, func() bool {
		st, err := cl.Client().Status(context.Background(), cl.URL(0))
		return err == nil && st.LeaderID == ""
	}) {
		t.Fatal("node 0 still knows a leader 30 s after two of three nodes died")
	}
	t.Logf("node 0 knew it had no leader %s after the second kill", time.Since(lost).Round(time.Millisecond))
	limit := time.Duration(qt)*time.Second + 5*time.Second + 5*time.Second
	for i, c := range calls {
		args := map[string]any{"content": fmt.Sprintf("e%d", 100+i)}
		if c.args != nil {
			args = c.args(100 + i)
		}
		began := time.Now()
		text := s.fails(c.tool, args, "DATABASE_UNAVAILABLE")
		took := time.Since(began)
		t.Logf("no leader: %s answered DATABASE_UNAVAILABLE after %s: %s", c.tool, took.Round(time.Millisecond), firstLine(text))
		if took > limit {
			t.Errorf("%s took %s to answer, more than %s (--query-timeout %d s plus 5 s, plus slack)", c.tool, took, limit, qt)
		}
		if !strings.Contains(text, "start the stopped nodes") && !strings.Contains(text, "Try again") {
			t.Errorf("%s: the error does not say what to do: %s", c.tool, text)
		}
	}

	// A majority back: the same front serves again.
	back := time.Now()
	cl.Restart(other)
	restarted := time.Since(back)
	serve(2, 60*time.Second)
	t.Logf("a majority back (Restart returned after %s): every call served again %s after the restart began", restarted.Round(time.Millisecond), time.Since(back).Round(time.Millisecond))
	cl.Restart(down)
	serve(3, 60*time.Second)
	got := sameOnEveryNode(t, cl, []int{0, 1, 2}, "SELECT body FROM notes ORDER BY id")
	for _, w := range append([]string{"before"}, ackedNotes...) {
		if strings.Count(got, w+"\n") != 1 {
			t.Errorf("note %s is not in the cluster once: %q", w, got)
		}
	}
	if strings.Contains(got, "w100") {
		t.Errorf("a write refused without a leader landed: %q", got)
	}
	if events := nodeRows(t, cl, 0, "SELECT count(*) FROM memory_events WHERE content = 'e101'"); events != "0\n" {
		t.Errorf("an append refused without a leader landed: %q", events)
	}
	n := checkContents(t, cl, []int{0, 1, 2}, append([]string{"before the faults"}, ackedEvents...))
	verified(t, s, n)
}

// TestClusterSchemaRace: a write judged against one schema version fails
// as a whole when another front's schema change landed first (driven
// through the client so that the race is certain), and a front's write
// is judged again against the new schema.
func TestClusterSchemaRace(t *testing.T) {
	t.Parallel()
	cl := rqlitetest.Start(t, 3)
	a := startFront(t, cl, 0)
	b := startFront(t, cl, 1)
	a.ok("write_query", q("CREATE TABLE t (a TEXT, b INTEGER)"))
	a.ok("write_query", q("INSERT INTO t (a, b) VALUES ('one', 1)"))

	c := cl.Client()
	ctx := context.Background()
	version := func() int64 {
		res, err := c.Query(ctx, []rqlite.Statement{{SQL: "SELECT schema_version FROM pragma_schema_version"}}, rqlite.Linearizable)
		if err != nil {
			t.Fatal(err)
		}
		return res.Results[0].Values[0][0].(int64)
	}
	judged := version()
	// Front B's schema change lands between A's check and A's request.
	b.ok("destructive_query", map[string]any{"query": "ALTER TABLE t ADD COLUMN c TEXT", "reason": "a new column"})
	if v := version(); v == judged {
		t.Fatalf("ALTER TABLE left the schema version at %d", v)
	}
	g := memory.SchemaGuard(judged)
	_, err := c.Execute(ctx, []rqlite.Statement{{SQL: g.SQL, Args: g.Args}, {SQL: "INSERT INTO t (a, b) VALUES ('stale', 2)"}})
	var se *rqlite.StatementError
	if !errors.As(err, &se) || se.Index != 0 {
		t.Fatalf("a request guarded by the old schema version: %v, want statement 0 (the guard) to fail it", err)
	}
	if got := sameOnEveryNode(t, cl, []int{0, 1, 2}, "SELECT count(*) FROM t WHERE a = 'stale'"); got != "0\n" {
		t.Fatalf("the stale request's INSERT landed: %q", got)
	}

	// Through the fronts: A's next write is judged on the new schema.
	a.ok("write_query", q("INSERT INTO t (a, b, c) VALUES ('two', 2, 'new column')"))
	b.ok("destructive_query", map[string]any{"query": "ALTER TABLE t DROP COLUMN c", "reason": "the column goes"})
	a.fails("write_query", q("INSERT INTO t (a, b, c) VALUES ('three', 3, 'gone')"), "SQL_ERROR")
	if got := sameOnEveryNode(t, cl, []int{0, 1, 2}, "SELECT a, b FROM t ORDER BY rowid"); got != "one 1\ntwo 2\n" {
		t.Fatalf("t on every node: %q", got)
	}
}

// nodeState is what an agent statement could change on node i: the
// schema and every table's row count (the audit log aside).
func nodeState(t *testing.T, cl *rqlitetest.Cluster, i int) string {
	t.Helper()
	schema := nodeRows(t, cl, i, "SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master ORDER BY type, name")
	var b strings.Builder
	b.WriteString(schema)
	for _, line := range strings.Split(nodeRows(t, cl, i, "SELECT name FROM sqlite_master WHERE type = 'table' AND name <> 'query_log' AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY name"), "\n") {
		if line != "" {
			fmt.Fprintf(&b, "%s: %s", line, nodeRows(t, cl, i, `SELECT count(*) FROM "`+line+`"`))
		}
	}
	for _, p := range []string{"user_version", "application_id", "journal_mode", "page_size", "auto_vacuum"} {
		fmt.Fprintf(&b, "%s=%s", p, nodeRows(t, cl, i, "SELECT * FROM pragma_"+p))
	}
	return b.String()
}

// nodeFiles lists every file under node i's data directory but its Raft
// state and SQLite's own files.
func nodeFiles(t *testing.T, cl *rqlitetest.Cluster, i int) []string {
	t.Helper()
	var files []string
	root := cl.DataDir(i)
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		if strings.HasPrefix(rel, "db.sqlite") || rel == "raft.db" || strings.HasPrefix(rel, "rsnapshots") {
			return nil
		}
		files = append(files, rel)
		return nil
	})
	sort.Strings(files)
	return files
}

// TestClusterPolicyCorpus sends the hostile corpus's forbidden statements,
// and the functions that would make nodes differ, through a front in
// cluster mode: every one is refused before it reaches rqlite (none
// answers with rqlite's "nothing was changed"), nothing changed on any
// node, and no file appeared in any node's directory.
func TestClusterPolicyCorpus(t *testing.T) {
	t.Parallel()
	var corpus []hostile
	for _, h := range hostileCorpus() {
		// "INSERT INTO t(v) SELECT 'x' RETURNING (SELECT count(*) FROM
		// memory_events)" only reads a protected table: both modes allow
		// it on its own. TestHostileCorpus sees it refused because an
		// allowed statement before it (CREATE TRIGGER st_x AFTER INSERT ON
		// t ... DELETE FROM sqlite_stat1) makes every insert into t fail;
		// this test sends the forbidden statements alone.
		if h.mustRefuse && !strings.Contains(h.sql, "RETURNING (SELECT count(*) FROM") {
			corpus = append(corpus, h)
		}
	}
	if testing.Short() {
		corpus = corpus[:150] // shuffled: a sample of every kind; .ci/run sends them all
	}
	for _, sql := range []string{
		"INSERT INTO t (v) VALUES (random())", "INSERT INTO t (v) VALUES (hex(randomblob(8)))",
		"INSERT INTO t (v) VALUES (datetime('now'))", "UPDATE t SET v = CURRENT_TIMESTAMP", "INSERT INTO t (v) VALUES (date())",
		"INSERT INTO t (v) SELECT load_extension('/tmp/evil.so')", "PRAGMA writable_schema = ON",
		"ATTACH DATABASE 'evil.db' AS e", "VACUUM INTO 'stolen.db'", "VACUUM", "BEGIN",
		"INSERT INTO t (v) VALUES ('a'); INSERT INTO t (v) VALUES ('b')",
	} {
		corpus = append(corpus, hostile{sql, "write_query", true}, hostile{sql, "destructive_query", true})
	}
	cl := rqlitetest.Start(t, 3)
	s := startFront(t, cl, 0, "--query-timeout", "3")
	s.ok("write_query", q("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)"))
	s.ok("write_query", q("INSERT INTO t (v) VALUES ('one'), ('two')"))
	s.ok("write_query", q("CREATE VIRTUAL TABLE f USING fts5(body)"))
	s.ok("write_query", q("INSERT INTO f (body) VALUES ('hello world')"))
	s.ok("write_query", q("CREATE VIRTUAL TABLE r USING rtree(id, x0, x1)"))
	s.ok("write_query", q("INSERT INTO r VALUES (1, 1, 5)"))
	for i := range 3 {
		s.ok("append_event", map[string]any{"content": fmt.Sprintf("event %d", i)})
	}
	s.ok("checkpoint", map[string]any{"summary": "before the hostile corpus"})

	all := []int{0, 1, 2}
	sameOnEveryNode(t, cl, all, "SELECT count(*) FROM memory_checkpoints")
	var before []string
	var files [][]string
	for _, i := range all {
		before = append(before, nodeState(t, cl, i))
		files = append(files, nodeFiles(t, cl, i))
	}
	codes := map[string]int{}
	for i, h := range corpus {
		args := q(h.sql)
		if h.tool == "destructive_query" {
			args["reason"] = "hostile corpus"
		}
		text, isErr := s.call(h.tool, args)
		code, _, _ := strings.Cut(text, ":")
		codes[code]++
		if code == "SQL_ERROR" && codes[code] <= 3 {
			t.Logf("refused as SQL_ERROR (the judge could not compile it): %s %q: %s", h.tool, h.sql, firstLine(text))
		}
		switch {
		case !isErr && knownGaps[normalizeSQL(h.sql)] != "":
			t.Logf("known policy gap, allowed: %s %q (%s)", h.tool, h.sql, knownGaps[normalizeSQL(h.sql)])
		case !isErr:
			t.Errorf("#%d %s %q was allowed: %s", i, h.tool, h.sql, firstLine(text))
		case strings.Contains(text, "nothing was changed") || strings.Contains(text, "rqlite"):
			t.Errorf("#%d %s %q reached the cluster before it was refused: %s", i, h.tool, h.sql, firstLine(text))
		case code == "WORKER_FAILED" || code == "TIMEOUT" || code == "DATABASE_UNAVAILABLE":
			t.Errorf("#%d %s %q: not refused but failed: %s", i, h.tool, h.sql, firstLine(text))
		}
	}
	// The last refusals' audit rows are queued, then written: wait for them
	// so that the comparison below sees a settled cluster.
	s.ok("read_query", q("SELECT 1"))
	for k, i := range all {
		if after := nodeState(t, cl, i); after != before[k] {
			t.Errorf("node %d changed:\nbefore:\n%s\nafter:\n%s", i, before[k], after)
		}
		if got := nodeFiles(t, cl, i); !slices.Equal(got, files[k]) {
			t.Errorf("node %d's directory holds %v, before %v", i, got, files[k])
		}
	}
	for _, name := range []string{"evil.db", "stolen.db"} {
		if _, err := os.Stat(filepath.Join(cl.DataDir(0), name)); err == nil {
			t.Errorf("%s was created", name)
		}
	}
	verified(t, s, 3)
	t.Logf("%d statements refused: %v", len(corpus), codes)
}

// TestClusterRunaway: a read that never ends is stopped at --query-timeout
// and the cluster serves on; a write that never ends is stopped on every
// node at --query-timeout (rqlite's db_timeout, in the Raft entry) and
// rolled back as a whole, and the cluster serves on. A write with
// RETURNING answers its count.
func TestClusterRunaway(t *testing.T) {
	t.Parallel()
	const qt = 2
	cl := rqlitetest.Start(t, 3)
	s := startFront(t, cl, 0, "--query-timeout", fmt.Sprint(qt))
	s.ok("write_query", q("CREATE TABLE t (x INTEGER)"))
	const forever = "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) "

	began := time.Now()
	text := s.fails("read_query", q(forever+"SELECT count(*) FROM n"), "TIMEOUT")
	t.Logf("runaway read stopped after %s: %s", time.Since(began).Round(time.Millisecond), firstLine(text))
	s.ok("write_query", q("INSERT INTO t (x) VALUES (1)"))

	// A write that inserts nothing but never ends (no disk growth).
	began = time.Now()
	text = s.fails("write_query", q(forever+"INSERT INTO t (x) SELECT x FROM n WHERE x < 0"), "TIMEOUT")
	took := time.Since(began)
	t.Logf("runaway write stopped after %s: %s", took.Round(time.Millisecond), firstLine(text))
	if limit := time.Duration(qt)*time.Second + 10*time.Second; took > limit {
		t.Errorf("the runaway write took %s to answer, more than %s", took, limit)
	}
	if !strings.Contains(text, "every node stopped it") {
		t.Errorf("the runaway write's error: %s", text)
	}
	// The cluster serves on: a write, then every node agrees.
	s.ok("write_query", q("INSERT INTO t (x) VALUES (2)"))
	if got := sameOnEveryNode(t, cl, []int{0, 1, 2}, "SELECT group_concat(x) FROM t"); got != "1,2\n" {
		t.Fatalf("t on every node: %q", got)
	}
	s.ok("append_event", map[string]any{"content": "after the runaways"})
	verified(t, s, 1)

	// RETURNING: rqlite runs the text unparsed (noparse), so the count is
	// the statement's however rqlite's parser would have read it (it made
	// the first a query answering 0 rows affected, the second not).
	for _, sql := range []string{"INSERT INTO t (x) VALUES (3) RETURNING x", "INSERT INTO [t] (x) VALUES (4) RETURNING x"} {
		got := s.ok("write_query", q(sql))
		if !strings.HasPrefix(got, "ok: 1 rows affected (last_insert_rowid=") || !strings.Contains(got, "read them with read_query") {
			t.Errorf("%s answered %q", sql, got)
		}
	}
	if got := sameOnEveryNode(t, cl, []int{0, 1, 2}, "SELECT group_concat(x) FROM t"); got != "1,2,3,4\n" {
		t.Fatalf("t on every node: %q", got)
	}
}

// TestClusterOverHTTPAudit: a front in cluster mode serves the tools over
// --http with a token file; the audit rows name the agent.
func TestClusterOverHTTPAudit(t *testing.T) {
	t.Parallel()
	cl := rqlitetest.Start(t, 3)
	h := &httpServer{t: t, tokens: filepath.Join(testDir(t), "tokens"), token: map[string]string{}}
	h.token["alice"] = addToken(t, h.tokens, "alice")
	h.start("--rqlite", strings.Join(cl.URLs(), ","), "--rqlite-data", cl.DataDir(1))
	s := h.connect(t, "alice", false)
	s.ok("write_query", q("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)"))
	s.ok("write_query", q("INSERT INTO notes (body) VALUES ('over http')"))
	if got := s.ok("read_query", q("SELECT body FROM notes")); !strings.HasPrefix(got, "body\nover http\n") {
		t.Fatalf("read over HTTP: %q", got)
	}
	s.ok("append_event", map[string]any{"content": "alice was here"})
	got := sameOnEveryNode(t, cl, []int{0, 1, 2}, "SELECT tool, json_extract(detail, '$.agent') FROM query_log WHERE tool IN ('write_query', 'append_event') ORDER BY id")
	if got != "write_query alice\nwrite_query alice\nappend_event alice\n" {
		t.Fatalf("the audit rows of alice's writes: %q", got)
	}
	if got := nodeRows(t, cl, 1, "SELECT session FROM memory_events"); !strings.Contains(got, "alice") {
		t.Fatalf("the event's session should name the agent: %q", got)
	}
}
