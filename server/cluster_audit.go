package server

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/audit"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/cluster/rqlite"
)

// auditRow is the call's audit row as a statement of the cluster request
// that carries its write: the row commits with the write on every node, or
// neither does (SPEC 13: audit rows are never lost and never precede
// their write). Its duration is the time up to the request.
func (s *Server) auditRow(c *call) rqlite.Statement {
	st := audit.ClusterInsert(s.auditEntry(c.tool, c.start, c, nil))
	return rqlite.Statement{SQL: st.SQL, Args: st.Args}
}

// clusterAuditor queues the audit rows of calls that wrote nothing (reads,
// refusals, failures) and writes them to the cluster in batches, one
// request each, as the single-file queue does: a reply never waits for
// its row.
type clusterAuditor struct {
	cl  *cluster
	log hclog.Logger

	mu      sync.Mutex
	queue   []audit.Entry
	writing bool
	idle    *sync.Cond // broadcast when the queue is empty and nothing is being written
	closed  bool
	kick    chan struct{}
	done    chan struct{}
}

// Bounds of the cluster's audit queue.
const (
	clusterAuditBatch = 256
	// clusterAuditMax bounds the queue while the cluster is down: rows
	// beyond it are dropped, and the log says how many.
	clusterAuditMax = 1 << 16
	// clusterAuditAwait bounds AwaitAudit.
	clusterAuditAwait = 2 * time.Second
	// clusterAuditClose bounds the last writes at shutdown.
	clusterAuditClose = 10 * time.Second
)

func newClusterAuditor(cl *cluster, log hclog.Logger) *clusterAuditor {
	a := &clusterAuditor{cl: cl, log: log, kick: make(chan struct{}, 1), done: make(chan struct{})}
	a.idle = sync.NewCond(&a.mu)
	go a.run()
	return a
}

// Audit queues e.
func (a *clusterAuditor) Audit(_ context.Context, e audit.Entry) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return errors.New("the audit queue is closed")
	}
	if len(a.queue) >= clusterAuditMax {
		return errors.New("the cluster has not taken audit rows for a while; the queue is full and this row is dropped")
	}
	a.queue = append(a.queue, e)
	select {
	case a.kick <- struct{}{}:
	default:
	}
	return nil
}

// AwaitAudit waits, at most clusterAuditAwait, for the queued rows to be
// written, so that a call reads the rows of the calls answered before it.
func (a *clusterAuditor) AwaitAudit() {
	deadline := time.Now().Add(clusterAuditAwait)
	timer := time.AfterFunc(clusterAuditAwait, func() {
		a.mu.Lock()
		a.idle.Broadcast()
		a.mu.Unlock()
	})
	defer timer.Stop()
	a.mu.Lock()
	defer a.mu.Unlock()
	for (len(a.queue) > 0 || a.writing) && !a.closed && time.Now().Before(deadline) {
		a.idle.Wait()
	}
}

// run writes the queue until Close.
func (a *clusterAuditor) run() {
	defer close(a.done)
	for range a.kick {
		a.drain(context.Background(), 0)
		a.mu.Lock()
		closed := a.closed
		a.mu.Unlock()
		if closed {
			return
		}
	}
}

// drain writes batches until the queue is empty; with a bound > 0 it
// gives up after that long.
func (a *clusterAuditor) drain(ctx context.Context, bound time.Duration) {
	var stop time.Time
	if bound > 0 {
		stop = time.Now().Add(bound)
	}
	for {
		a.mu.Lock()
		n := min(len(a.queue), clusterAuditBatch)
		if n == 0 {
			a.writing = false
			a.idle.Broadcast()
			a.mu.Unlock()
			return
		}
		batch := a.queue[:n:n]
		a.writing = true
		a.mu.Unlock()

		stmts := make([]rqlite.Statement, len(batch))
		for i, e := range batch {
			st := audit.ClusterInsert(e)
			stmts[i] = rqlite.Statement{SQL: st.SQL, Args: st.Args}
		}
		res, err := a.cl.client.Execute(ctx, stmts)
		switch {
		case err == nil:
			a.cl.wroteAudited(res, len(stmts)-1)
		case errors.Is(err, rqlite.ErrUnknownOutcome), errors.Is(err, rqlite.ErrUnavailable):
			// Tried again below; an unknown outcome may write a batch twice,
			// which the log says (an audit row is a record, not the memory).
			a.log.Warn("audit rows not written yet; trying again", "rows", n, "error", err)
			if !stop.IsZero() && time.Now().After(stop) {
				a.dropAll("the cluster did not take them before shutdown")
				return
			}
			time.Sleep(500 * time.Millisecond)
			continue
		default:
			a.log.Error("audit rows refused by the cluster; dropped", "rows", n, "error", err)
		}
		a.mu.Lock()
		a.queue = a.queue[n:]
		a.mu.Unlock()
	}
}

func (a *clusterAuditor) dropAll(why string) {
	a.mu.Lock()
	n := len(a.queue)
	a.queue, a.writing = nil, false
	a.idle.Broadcast()
	a.mu.Unlock()
	a.log.Error("audit rows lost", "rows", n, "why", why)
}

// Close writes what is queued, for at most clusterAuditClose.
func (a *clusterAuditor) Close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	a.idle.Broadcast()
	a.mu.Unlock()
	close(a.kick)
	<-a.done
	a.drain(context.Background(), clusterAuditClose)
	return nil
}
