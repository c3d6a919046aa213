package server

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/cluster/rqlite"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/config"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/memory"
)

// cluster is the front's side of cluster mode (SPEC 13, docs/cluster.md):
// the memory lives in an rqlite cluster; this front writes through the
// cluster's HTTP API, one atomic request per write, and reads the SQLite
// file of the node beside it (read-only, in workers and in its own store).
type cluster struct {
	client *rqlite.Client
	// local is the URL of the node beside this front, whose file is file.
	local string
	file  string
	// written is the highest Raft index of a write this front had
	// acknowledged: reads wait until the local node applied it, so that
	// every caller reads its own acknowledged writes.
	written atomic.Uint64
	log     hclog.Logger
	// wait bounds every wait of a call on the cluster (a leader, the
	// local node catching up, a failover): --query-timeout plus 5 s.
	wait time.Duration
	// appendMu makes this front's appends take turns: they would only
	// race each other for the head.
	appendMu sync.Mutex
	// remote is set when no node is beside this front (cluster_remote.go).
	remote *remote

	// The fast way to know the local node holds this front's writes
	// without asking its /status (2-3 ms in rqlite v8): every write of
	// this front carries an audit row in its own request, and query_log
	// ids follow the Raft order (append-only, assigned as each node
	// applies the log). witness is the highest query_log id of this
	// front's acknowledged writes; node reads the local file; fresh is
	// when a /status last showed the node caught up with a leader
	// (UnixNano).
	witness atomic.Int64
	node    *sql.DB
	fresh   atomic.Int64
}

// Bounds of cluster mode.
const (
	// clusterStartWait is how long a start waits for the cluster to
	// take the schema (a leader being elected).
	clusterStartWait = 60 * time.Second
	// clusterWaitSlack is added to --query-timeout to bound a call's
	// waits on the cluster (cluster.wait): a new leader is elected in
	// about 3.4 s on loopback.
	clusterWaitSlack = 5 * time.Second
	// appendAttempts bounds the retries of an append that lost the race
	// for the head to another front.
	appendAttempts = 64
	// leaderFresh is how long a /status that showed the local node with a
	// leader lets reads go ahead on the witness alone. A node cut off from
	// the majority notices it within about a second anyway (election
	// timeout), so this adds at most half a second to that.
	leaderFresh = 500 * time.Millisecond
)

// openCluster connects to the cluster, makes sure the memory's schema is
// there, waits for the local node to have it and opens that node's file
// read-only as the store the memory reads go through.
func (s *Server) openCluster(ctx context.Context) error {
	cfg := s.cfg
	if cfg.RQLiteData == "" {
		return s.openRemote(ctx) // no node beside this front: cluster_remote.go
	}
	wait := cfg.QueryTimeout + clusterWaitSlack
	// A call that no node serves fails after wait (Failover), not the
	// client's default; a statement running longer than --query-timeout
	// is stopped on every node (DBTimeout: docs/cluster.md, "A runaway
	// write").
	client, err := rqlite.New(cfg.RQLite, rqlite.Options{Timeout: wait, Failover: wait, DBTimeout: cfg.QueryTimeout, Log: s.log.Named("rqlite")})
	if err != nil {
		return &config.UsageError{Msg: fmt.Sprintf("--rqlite: %v", err)}
	}
	cl := &cluster{client: client, file: cfg.NodeFile(), log: s.log.Named("cluster"), wait: wait}
	startCtx, cancel := context.WithTimeout(ctx, clusterStartWait)
	defer cancel()
	res, err := cl.schema(startCtx, s.model != nil)
	if err != nil {
		return fmt.Errorf("cluster %s: the memory's schema could not be written: %w\nstart the nodes (docs/cluster.md) and make sure a majority of them is up", strings.Join(cfg.RQLite, ","), err)
	}
	if cl.local, err = cl.findLocal(startCtx, cfg.RQLiteData); err != nil {
		return err
	}
	cl.written.Store(res)
	if err := cl.catchUp(startCtx); err != nil {
		return err
	}
	// The hold (see takeHold) comes before this process's first SQLite
	// connection to the node's file and goes after its last: closing any
	// other descriptor of it would drop SQLite's locks; the workers'
	// sandbox reads the file's header through it.
	if s.hold, err = os.Open(cl.file); err != nil {
		return fmt.Errorf("open the local node's file %s (is --rqlite-data the node's data directory?): %w", cl.file, err)
	}
	store, err := memory.OpenNode(ctx, cl.file, s.embedder(), memory.DefaultFusion, s.log.Named("memory"))
	if err != nil {
		return fmt.Errorf("open the local node's file %s: %w", cl.file, err)
	}
	if cl.node, err = sql.Open("sqlite", memory.ReadOnlyDSN(cl.file)); err != nil {
		store.Close()
		return fmt.Errorf("open the local node's file %s: %w", cl.file, err)
	}
	cl.node.SetMaxOpenConns(2)
	s.closers = append(s.closers, cl.node, cl.watch())
	s.store, s.cluster = store, cl
	s.auditor = newClusterAuditor(cl, s.log.Named("audit"))
	s.closers = append(s.closers, store, s.auditor.(*clusterAuditor))
	s.log.Info("cluster mode", "nodes", strings.Join(cfg.RQLite, ","), "local", cl.local, "file", cl.file)
	return nil
}

// schema creates the memory's tables, indexes and guards in the cluster
// (every statement IF NOT EXISTS, so every front may run it) and returns
// the Raft index of that write.
func (cl *cluster) schema(ctx context.Context, vectors bool) (uint64, error) {
	plan := memory.ClusterSchema()
	if vectors {
		plan = append(plan, memory.ClusterVectorSchema()...)
	}
	stmts := statements(plan)
	for {
		res, err := cl.client.Execute(ctx, stmts)
		if err == nil {
			return res.RaftIndex, nil
		}
		if !errors.Is(err, rqlite.ErrUnavailable) && !errors.Is(err, rqlite.ErrUnknownOutcome) {
			return 0, err
		}
		cl.log.Info("waiting for the cluster", "error", err)
		select {
		case <-ctx.Done():
			return 0, err
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// findLocal returns the URL of the node whose data directory is dir.
func (cl *cluster) findLocal(ctx context.Context, dir string) (string, error) {
	var seen []string
	for _, node := range cl.client.Nodes() {
		st, err := cl.client.Status(ctx, node)
		if err != nil {
			seen = append(seen, node+": "+err.Error())
			continue
		}
		if sameDir(st.Dir, dir) {
			return node, nil
		}
		seen = append(seen, node+": data directory "+st.Dir)
	}
	return "", &config.UsageError{Msg: fmt.Sprintf("--rqlite-data %s is not the data directory of any node of --rqlite (%s)\nTry: --rqlite-data set to the directory the node beside this front was started with, and list that node in --rqlite",
		dir, strings.Join(seen, "; "))}
}

// catchUp waits, at most cl.wait, until the local node applied every
// write this front acknowledged and knows a leader. A node without a
// leader (an election, or too few nodes up for a majority) may hold a
// stale copy: a read there would answer "ok" while the cluster serves
// nobody, so it waits for a leader and otherwise fails.
func (cl *cluster) catchUp(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, cl.wait)
	defer cancel()
	if cl.remote != nil {
		return cl.remote.refresh(ctx, cl.client) // no local node: the schema mirror
	}
	if cl.witnessed(ctx) {
		return nil
	}
	want := cl.written.Load()
	poll := 2 * time.Millisecond
	for {
		st, err := cl.client.Status(ctx, cl.local)
		if err == nil && st.LeaderID != "" && st.AppliedIndex >= want {
			cl.fresh.Store(time.Now().UnixNano())
			return nil
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return cl.notCaughtUp(st, err, want)
		case <-t.C:
		}
		poll = min(2*poll, 100*time.Millisecond)
	}
}

// statusEvery is how often the watcher asks the local node's /status:
// well within leaderFresh, so that a healthy node is always fresh.
const statusEvery = 200 * time.Millisecond

// watch asks the local node's /status every statusEvery until the
// returned closer is closed, and marks it fresh while it knows a leader
// and holds this front's writes: calls then need not ask it themselves.
func (cl *cluster) watch() io.Closer {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(statusEvery)
		defer tick.Stop()
		for {
			want := cl.written.Load()
			sctx, scancel := context.WithTimeout(ctx, leaderFresh)
			st, err := cl.client.Status(sctx, cl.local)
			scancel()
			if err == nil && st.LeaderID != "" && st.AppliedIndex >= want {
				cl.fresh.Store(time.Now().UnixNano())
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return closerFunc(func() error { cancel(); <-done; return nil })
}

// closerFunc is a function as an io.Closer.
type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// witnessed reports, without asking the node, whether the local node
// holds this front's writes: a /status showed it with a leader less than
// leaderFresh ago, and its file holds this front's newest audit row.
func (cl *cluster) witnessed(ctx context.Context) bool {
	if cl.node == nil || time.Since(time.Unix(0, cl.fresh.Load())) >= leaderFresh {
		return false
	}
	var newest int64
	err := cl.node.QueryRowContext(ctx, "SELECT coalesce(max(id), 0) FROM "+memory.TableQueryLog).Scan(&newest)
	return err == nil && newest >= cl.witness.Load()
}

// notCaughtUp is the agent's error for a read the local node could not
// serve within cl.wait, saying why from its last status.
func (cl *cluster) notCaughtUp(st rqlite.NodeStatus, err error, want uint64) error {
	var why string
	switch {
	case err != nil:
		why = fmt.Sprintf("does not answer (%v): restart it, or point this server at a running node", err)
	case st.LeaderID == "":
		why = "knows no leader: an election is under way, or too few nodes are up for a majority; start the stopped nodes"
	default:
		why = fmt.Sprintf("has applied Raft index %d of this server's %d: it is behind the leader; check that node", st.AppliedIndex, want)
	}
	return errcode.New(errcode.DatabaseUnavailable, fmt.Sprintf("the rqlite node beside this server (%s) %s; waited %s, nothing ran. Try again in a few seconds", cl.local, why, cl.wait))
}

// wroteAudited notes an acknowledged write whose statement audit (an
// index into res.Results) is its audit row: later reads wait for it.
func (cl *cluster) wroteAudited(res *rqlite.ExecResult, audit int) {
	if audit >= 0 && audit < len(res.Results) {
		for id := res.Results[audit].LastInsertID; ; {
			old := cl.witness.Load()
			if id <= old || cl.witness.CompareAndSwap(old, id) {
				break
			}
		}
	}
	cl.advance(res.RaftIndex)
}

// wrote notes a write's Raft index: later reads wait for it. A write
// noted without its audit row (wroteAudited) makes the next read ask the
// node's /status.
func (cl *cluster) wrote(index uint64) {
	cl.fresh.Store(0)
	cl.advance(index)
}

// advance raises written to index.
func (cl *cluster) advance(index uint64) {
	for {
		old := cl.written.Load()
		if index <= old || cl.written.CompareAndSwap(old, index) {
			return
		}
	}
}

// statements converts the memory's statement plans to the client's.
func statements(plan []memory.Stmt) []rqlite.Statement {
	out := make([]rqlite.Statement, len(plan))
	for i, p := range plan {
		out[i] = rqlite.Statement{SQL: p.SQL, Args: p.Args}
	}
	return out
}

// unavailable is the agent's error for a cluster that did not take a
// request: nothing was written.
func unavailable(err error) error {
	return errcode.New(errcode.DatabaseUnavailable, fmt.Sprintf("the rqlite cluster did not take the request (%v); nothing was written. Try again in a few seconds: a new leader is elected by itself while a majority of the nodes is up", err))
}

// unknownOutcome is the agent's error for a write whose fate is unknown.
func unknownOutcome(err error) error {
	return errcode.New(errcode.DatabaseUnavailable, fmt.Sprintf("the rqlite cluster did not answer (%v): the statement may or may not have been applied. Check with read_query before you repeat it", err))
}

// clusterError maps a failed cluster request to the agent's error.
func clusterError(err error) error {
	switch {
	case errors.Is(err, rqlite.ErrUnknownOutcome):
		return unknownOutcome(err)
	case errors.Is(err, rqlite.ErrUnavailable):
		return unavailable(err)
	}
	var se *rqlite.StatementError
	if errors.As(err, &se) {
		return errcode.New(errcode.SQL, se.Message)
	}
	var ce *errcode.Error
	if errors.As(err, &ce) {
		return err
	}
	return unavailable(err)
}

// clusterAppend appends one event through the cluster: the head is read
// (appendHead), the event hashed here (SPEC 5.1) and inserted with its
// index rows and its audit row in one request. The UNIQUE(prev_hash)
// guard refuses it when another front appended first; then it is planned
// again on the new head, keeping its time. A request whose fate was
// unknown (timeout, leader change) is looked for by its hash before every
// later attempt: an event lands once, never twice (docs/cluster.md).
func (s *Server) clusterAppend(c *call, session, kind, content string) (memory.Event, error) {
	cl := s.cluster
	cl.appendMu.Lock()
	defer cl.appendMu.Unlock()
	ts := time.Now()
	unsure := map[string]memory.Event{} // sent, fate unknown
	var last error
	for attempt := 0; attempt < appendAttempts; attempt++ {
		if len(unsure) > 0 {
			ev, found, err := cl.landed(c.ctx, unsure)
			if err != nil {
				return memory.Event{}, unknownOutcome(last)
			}
			if found {
				c.audited = true // its audit row went with it
				return ev, nil
			}
		}
		head, err := cl.appendHead(c.ctx, attempt)
		if err != nil {
			return memory.Event{}, clusterError(err)
		}
		ev, plan, err := memory.PlanAppend(head, ts, session, kind, content, s.embedder())
		if err != nil {
			return memory.Event{}, memoryError(err)
		}
		c.setRows(1)
		c.detail["event_id"], c.detail["kind"] = ev.ID, ev.Kind
		stmts := append(statements(plan), s.auditRow(c))
		res, err := cl.client.Execute(c.ctx, stmts)
		if err == nil {
			cl.wroteAudited(res, len(stmts)-1)
			c.audited = true
			return ev, nil
		}
		last = err
		var se *rqlite.StatementError
		switch {
		case errors.As(err, &se) && memory.ChainConflict(se.Message):
			continue
		case errors.Is(err, rqlite.ErrUnknownOutcome):
			cl.log.Warn("an append's fate is unknown; looking for it before appending again", "event", ev.ID, "error", err)
			unsure[ev.Hash] = ev
			continue
		}
		return memory.Event{}, clusterError(err)
	}
	if len(unsure) > 0 {
		return memory.Event{}, unknownOutcome(last) // one of them may yet land
	}
	return memory.Event{}, errcode.New(errcode.DatabaseUnavailable, fmt.Sprintf("the event could not be appended in %d attempts (%v); nothing was written. Try again", appendAttempts, last))
}

// appendHead is the head an append plans on: at its first attempt the
// local node's (it holds this front's own appends; if another front
// appended since, the chain guard refuses the plan at no cost but a
// request), then the leader's. That saves a linearizable read, a round
// trip to the leader, per append.
func (cl *cluster) appendHead(ctx context.Context, attempt int) (memory.Head, error) {
	if attempt == 0 && cl.witnessed(ctx) {
		if h, err := memory.ReadHead(ctx, cl.node); err == nil {
			return h, nil
		}
	}
	// A local node that is down or behind is no reason to stop: the
	// leader has the head.
	return cl.head(ctx)
}

// head reads the chain's head from the leader (a linearizable read: no
// write acknowledged before it is missed).
func (cl *cluster) head(ctx context.Context) (memory.Head, error) {
	res, err := cl.client.Query(ctx, []rqlite.Statement{{SQL: "SELECT id, hash FROM memory_events ORDER BY id DESC LIMIT 1"}}, rqlite.Linearizable)
	if err != nil {
		return memory.Head{}, err
	}
	rows := res.Results[0].Values
	if len(rows) == 0 {
		return memory.Head{ID: 0, Hash: memory.GenesisHash}, nil
	}
	id, ok1 := rows[0][0].(int64)
	hash, ok2 := rows[0][1].(string)
	if !ok1 || !ok2 {
		return memory.Head{}, fmt.Errorf("the chain's head has an unexpected shape: %v", rows[0])
	}
	return memory.Head{ID: id, Hash: hash}, nil
}

// landed looks, waiting at most cl.wait for the cluster while it has no
// leader, for any of the events sent with an unknown fate.
func (cl *cluster) landed(ctx context.Context, sent map[string]memory.Event) (memory.Event, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, cl.wait)
	defer cancel()
	hashes := make([]any, 0, len(sent))
	marks := make([]string, 0, len(sent))
	for h := range sent {
		hashes = append(hashes, h)
		marks = append(marks, "?")
	}
	q := []rqlite.Statement{{SQL: "SELECT hash FROM memory_events WHERE hash IN (" + strings.Join(marks, ",") + ")", Args: hashes}}
	for {
		res, err := cl.client.Query(ctx, q, rqlite.Linearizable)
		if err == nil {
			for _, row := range res.Results[0].Values {
				if h, ok := row[0].(string); ok {
					return sent[h], true, nil
				}
			}
			return memory.Event{}, false, nil
		}
		if !errors.Is(err, rqlite.ErrUnavailable) {
			return memory.Event{}, false, err
		}
		select {
		case <-ctx.Done():
			return memory.Event{}, false, err
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// catchUpLeader waits, bounded, until the local node applied what the
// most advanced node it can reach applied: after a guard failed because
// the local copy was behind another front's write.
func (cl *cluster) catchUpLeader(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, cl.wait)
	defer cancel()
	var most uint64
	for _, node := range cl.client.Nodes() {
		if st, err := cl.client.Status(ctx, node); err == nil {
			most = max(most, st.AppliedIndex)
		}
	}
	cl.wrote(most)
	return cl.catchUp(ctx)
}

// clusterCheckpoint writes a checkpoint through the cluster, anchored to
// the head it read: a guard in the same request fails it if the head
// moved meanwhile, and it is written again on the new head.
func (s *Server) clusterCheckpoint(c *call, session, summary string) (memory.Checkpoint, error) {
	cl := s.cluster
	ts := time.Now()
	var last error
	for attempt := 0; attempt < appendAttempts; attempt++ {
		head, err := cl.head(c.ctx)
		if err != nil {
			return memory.Checkpoint{}, clusterError(err)
		}
		cp, plan, err := memory.PlanCheckpoint(head, ts, session, summary, s.embedder())
		if err != nil {
			return memory.Checkpoint{}, memoryError(err)
		}
		c.setRows(1)
		c.detail["last_event_id"] = cp.LastEventID
		stmts := append([]rqlite.Statement{{SQL: headGuardSQL, Args: []any{head.Hash}}}, statements(plan)...)
		stmts = append(stmts, s.auditRow(c))
		res, err := cl.client.Execute(c.ctx, stmts)
		if err == nil {
			cl.wroteAudited(res, len(stmts)-1)
			c.audited = true
			cp.ID = checkpointID(res)
			c.detail["checkpoint_id"] = cp.ID
			return cp, nil
		}
		last = err
		var se *rqlite.StatementError
		if errors.As(err, &se) && se.Index == 0 {
			continue // the head moved
		}
		// A checkpoint whose fate is unknown is not written again: a
		// second one would only repeat the summary.
		return memory.Checkpoint{}, clusterError(err)
	}
	return memory.Checkpoint{}, errcode.New(errcode.DatabaseUnavailable, fmt.Sprintf("the checkpoint could not be written in %d attempts: other servers kept appending (%v); nothing was written, try again", appendAttempts, last))
}

// headGuardSQL fails a checkpoint's request when the chain's head is no
// longer the one it anchors to.
const headGuardSQL = `INSERT OR REPLACE INTO ` + memory.TableClusterGuard + ` (k, ok) VALUES (4, coalesce((SELECT hash FROM memory_events ORDER BY id DESC LIMIT 1), '` + memory.GenesisHash + `') = ?)`

// checkpointID is the id the checkpoint's INSERT got: the first plan
// statement after the guard.
func checkpointID(res *rqlite.ExecResult) int64 {
	return res.Results[1].LastInsertID
}

// caughtUp waits in cluster mode until the local node holds this front's
// acknowledged writes; at once otherwise.
func (s *Server) caughtUp(ctx context.Context) error {
	if s.cluster == nil {
		return nil
	}
	return s.cluster.catchUp(ctx)
}

// embedder is the embedding model as the memory's plans take it: nil
// without --embedding-model.
func (s *Server) embedder() memory.Embedder {
	if s.model == nil {
		return nil
	}
	return s.model
}

// sameDir reports whether two paths name one directory: the node reports
// its data directory as it was given on its command line.
func sameDir(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}

// object returns the type and SQL of the schema object named name (any
// case), linearizably; "" when there is none.
func (cl *cluster) object(ctx context.Context, name string) (typ, sql string, err error) {
	res, err := cl.client.Query(ctx, []rqlite.Statement{{SQL: "SELECT type, coalesce(sql, '') FROM sqlite_schema WHERE name = ? COLLATE NOCASE", Args: []any{name}}}, rqlite.Linearizable)
	if err != nil {
		return "", "", err
	}
	if rows := res.Results[0].Values; len(rows) > 0 {
		typ, _ = rows[0][0].(string)
		sql, _ = rows[0][1].(string)
	}
	return typ, sql, nil
}
