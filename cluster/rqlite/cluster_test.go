package rqlite_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/cluster/rqlite"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/cluster/rqlitetest"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
)

// The tests below run against real 3-node clusters of rqlited v8.43.4 on
// loopback (package rqlitetest).

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// readFile reads node i's SQLite file read-only, as cluster mode's workers
// do, and returns query's rows as values.
func readFile(t *testing.T, c *rqlitetest.Cluster, i int, query string) [][]any {
	t.Helper()
	path := filepath.Join(c.DataDir(i), "db.sqlite")
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(query)
	if err != nil {
		t.Fatalf("node %d's file: %v", i, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out [][]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for k := range vals {
			ptrs[k] = &vals[k]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		out = append(out, vals)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestClusterExecuteAndQuery(t *testing.T) {
	c := rqlitetest.Start(t, 3)
	t.Logf("3 nodes started, leader known to all after %s", c.StartTook.Round(time.Millisecond))
	client := c.Client()
	ctx := ctxFor(t, 60*time.Second)

	res, err := client.Execute(ctx, []rqlite.Statement{
		{SQL: "CREATE TABLE t(id INTEGER PRIMARY KEY, r REAL, s TEXT, b BLOB, x)"},
		{SQL: "INSERT INTO t VALUES(?, ?, ?, ?, ?)", Args: []any{1, 2.0, "hé", []byte{0, 255, 'a'}, int64(9007199254740993)}},
		{SQL: "INSERT INTO t VALUES(?, ?, ?, ?, ?)", Args: []any{2, 1.5, "x'0'", "text in a blob column", 2.0}},
	})
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	if res.RaftIndex == 0 || len(res.Results) != 3 || res.Results[2].LastInsertID != 2 || res.Results[2].RowsAffected != 1 {
		t.Fatalf("result %+v", res)
	}

	// A failing statement rolls the whole request back on every node.
	_, err = client.Execute(ctx, []rqlite.Statement{
		{SQL: "INSERT INTO t(id) VALUES(3)"},
		{SQL: "INSERT INTO t(id) VALUES(1)"},
		{SQL: "INSERT INTO t(id) VALUES(4)"},
	})
	var se *rqlite.StatementError
	if !errors.As(err, &se) || se.Index != 1 || !errors.Is(err, errcode.SQL) {
		t.Fatalf("want a StatementError at 1, got %v", err)
	}

	// Level none reads the receiving node as it is: let all apply first.
	for i := range 3 {
		if err := client.WaitApplied(ctx, c.URL(i), res.RaftIndex); err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
	}
	want := [][]any{
		{int64(1), 2.0, "hé", []byte{0, 255, 'a'}, int64(9007199254740993), "integer"},
		// The REAL 2.0 in a column without a declared type reads back as
		// the integer 2: rqlite writes it as 2 and names the column's
		// type after the first row (docs/cluster.md, what reads lose).
		{int64(2), 1.5, "x'0'", "text in a blob column", int64(2), "real"},
	}
	for _, level := range []rqlite.Level{rqlite.None, rqlite.Weak, rqlite.Strong, rqlite.Linearizable} {
		q, err := client.Query(ctx, []rqlite.Statement{{SQL: "SELECT id, r, s, b, x, typeof(x) FROM t ORDER BY id"}}, level)
		if err != nil {
			t.Fatalf("Query %s: %v", level, err)
		}
		if got := q.Results[0].Values; !reflect.DeepEqual(got, want) {
			t.Fatalf("level %s rows\n got %#v\nwant %#v", level, got, want)
		}
	}
	if _, err := client.Query(ctx, []rqlite.Statement{{SQL: "INSERT INTO t(id) VALUES(9)"}}, rqlite.Weak); !errors.As(err, &se) {
		t.Fatalf("a write through Query: %v", err)
	}

	// Every node's own file holds the rows (read-only, as workers read).
	for i := range 3 {
		got := readFile(t, c, i, "SELECT id, b FROM t ORDER BY id")
		if len(got) != 2 || !bytes.Equal(got[0][1].([]byte), []byte{0, 255, 'a'}) {
			t.Fatalf("node %d's file holds %v", i, got)
		}
	}
}

// TestClusterFailover: with the leader killed, a write through the client
// succeeds once another node leads, and the killed node catches up when it
// is back.
func TestClusterFailover(t *testing.T) {
	c := rqlitetest.Start(t, 3)
	client := c.Client()
	ctx := ctxFor(t, 90*time.Second)
	if _, err := client.Execute(ctx, []rqlite.Statement{{SQL: "CREATE TABLE t(id INTEGER PRIMARY KEY)"}, {SQL: "INSERT INTO t VALUES(1)"}}); err != nil {
		t.Fatal(err)
	}
	leader := c.Leader()
	if leader < 0 {
		t.Fatal("no leader")
	}
	c.Kill(leader)
	start := time.Now()
	res, err := client.Execute(ctxFor(t, 30*time.Second), []rqlite.Statement{{SQL: "INSERT INTO t VALUES(2)"}})
	if err != nil && errors.Is(err, rqlite.ErrUnknownOutcome) {
		// The request reached a node that lost its leader on the way:
		// find out, as a caller must.
		q, qerr := client.Query(ctx, []rqlite.Statement{{SQL: "SELECT count(*) FROM t WHERE id = 2"}}, rqlite.Strong)
		if qerr != nil {
			t.Fatalf("after an unknown outcome (%v): %v", err, qerr)
		}
		if q.Results[0].Values[0][0] == int64(0) {
			res, err = client.Execute(ctx, []rqlite.Statement{{SQL: "INSERT INTO t VALUES(2)"}})
		} else {
			res, err = &rqlite.ExecResult{RaftIndex: 1}, nil
		}
	}
	if err != nil {
		t.Fatalf("write after killing the leader: %v", err)
	}
	t.Logf("a write went through %s after the leader was killed", time.Since(start).Round(time.Millisecond))
	newLeader, err := c.WaitLeader(ctx)
	if err != nil || newLeader == leader {
		t.Fatalf("leader %d after %d was killed: %v", newLeader, leader, err)
	}
	c.Restart(leader)
	q, err := client.Query(ctx, []rqlite.Statement{{SQL: "SELECT max(id) FROM t"}}, rqlite.Linearizable)
	if err != nil {
		t.Fatal(err)
	}
	if got := q.Results[0].Values[0][0]; got != int64(2) {
		t.Fatalf("max(id) %v", got)
	}
	if err := client.WaitApplied(ctx, c.URL(leader), res.RaftIndex); err != nil {
		t.Fatalf("the restarted node: %v", err)
	}
	if got := readFile(t, c, leader, "SELECT count(*) FROM t"); got[0][0] != int64(2) {
		t.Fatalf("the restarted node's file holds %v rows", got[0][0])
	}
}

// TestClusterNoMajority: two of three nodes down, a call answers
// DATABASE_UNAVAILABLE within its deadline, never ok; the cluster serves
// again once they are back.
func TestClusterNoMajority(t *testing.T) {
	c := rqlitetest.Start(t, 3)
	client := c.Client()
	ctx := ctxFor(t, 90*time.Second)
	if _, err := client.Execute(ctx, []rqlite.Statement{{SQL: "CREATE TABLE t(id INTEGER PRIMARY KEY)"}}); err != nil {
		t.Fatal(err)
	}
	leader := c.Leader()
	killed := []int{(leader + 1) % 3, (leader + 2) % 3}
	for _, i := range killed {
		c.Kill(i)
	}
	callCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	start := time.Now()
	_, err := client.Execute(callCtx, []rqlite.Statement{{SQL: "INSERT INTO t VALUES(1)"}})
	took := time.Since(start)
	if err == nil || !errors.Is(err, errcode.DatabaseUnavailable) {
		t.Fatalf("a write with no majority: %v", err)
	}
	if took > 10*time.Second {
		t.Fatalf("the write took %s to fail, its deadline was 3 s", took)
	}
	t.Logf("no majority: %v (after %s)", err, took.Round(time.Millisecond))
	_, err = client.Query(callCtx, []rqlite.Statement{{SQL: "SELECT 1"}}, rqlite.Linearizable)
	if !errors.Is(err, rqlite.ErrUnavailable) {
		t.Fatalf("a linearizable read with no majority: %v", err)
	}
	for _, i := range killed {
		c.Restart(i)
	}
	if _, err := c.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Execute(ctx, []rqlite.Statement{{SQL: "INSERT INTO t VALUES(2)"}}); err != nil {
		t.Fatalf("after recovery: %v", err)
	}
	// A write left unknown may still take effect once the cluster is back
	// (its entry sits in the old leader's log); a strong read, through
	// the log, sees its settled fate.
	q, err := client.Query(ctx, []rqlite.Statement{{SQL: "SELECT count(*) FROM t WHERE id = 1"}}, rqlite.Strong)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the write without a majority took effect after recovery: %v", q.Results[0].Values[0][0] == int64(1))
}

// TestClusterBackupLoad: a backup is a SQLite file with the rows; loading
// it into an empty cluster gives every node the rows.
func TestClusterBackupLoad(t *testing.T) {
	src := rqlitetest.Start(t, 3)
	ctx := ctxFor(t, 90*time.Second)
	if _, err := src.Client().Execute(ctx, []rqlite.Statement{
		{SQL: "CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)"},
		{SQL: "INSERT INTO t VALUES(1, 'one'), (2, 'two')"},
	}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := src.Client().Backup(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "backup.db")
	if err := os.WriteFile(file, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+file+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRow("SELECT count(*) FROM t").Scan(&n); err != nil || n != 2 {
		t.Fatalf("the backup holds %d rows: %v", n, err)
	}
	db.Close()

	dst := rqlitetest.Start(t, 3)
	// Through a follower: it forwards the load to the leader.
	follower := (dst.Leader() + 1) % 3
	client, err := rqlite.New([]string{dst.URL(follower)}, rqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Load(ctx, bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatalf("Load: %v", err)
	}
	q, err := dst.Client().Query(ctx, []rqlite.Statement{{SQL: "SELECT v FROM t ORDER BY id"}}, rqlite.Strong)
	if err != nil {
		t.Fatal(err)
	}
	if got := q.Results[0].Values; !reflect.DeepEqual(got, [][]any{{"one"}, {"two"}}) {
		t.Fatalf("loaded rows %v", got)
	}
}

// TestClusterConcurrentWrites: clients on every node write at once (the
// followers forward to the leader); every acknowledged row is on every
// node's file exactly once.
func TestClusterConcurrentWrites(t *testing.T) {
	c := rqlitetest.Start(t, 3)
	ctx := ctxFor(t, 90*time.Second)
	if _, err := c.Client().Execute(ctx, []rqlite.Statement{{SQL: "CREATE TABLE t(id INTEGER PRIMARY KEY, writer INTEGER)"}}); err != nil {
		t.Fatal(err)
	}
	const writers, each = 6, 15
	indexes := make(chan uint64, writers*each)
	errs := make(chan error, writers)
	for w := range writers {
		client, err := rqlite.New([]string{c.URL(w % 3)}, rqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			for k := range each {
				res, err := client.Execute(ctx, []rqlite.Statement{{SQL: "INSERT INTO t(id, writer) VALUES(?, ?)", Args: []any{w*each + k, w}}})
				if err != nil {
					errs <- err
					return
				}
				indexes <- res.RaftIndex
			}
			errs <- nil
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	close(indexes)
	var last uint64
	seen := map[uint64]bool{}
	for i := range indexes {
		if seen[i] {
			t.Fatalf("two writes acknowledged with Raft index %d", i)
		}
		seen[i] = true
		last = max(last, i)
	}
	for i := range 3 {
		if err := c.Client().WaitApplied(ctx, c.URL(i), last); err != nil {
			t.Fatal(err)
		}
		got := readFile(t, c, i, "SELECT count(*), count(DISTINCT id) FROM t")
		if got[0][0] != int64(writers*each) || got[0][1] != int64(writers*each) {
			t.Fatalf("node %d holds %v rows (%v distinct), want %d", i, got[0][0], got[0][1], writers*each)
		}
	}
}
