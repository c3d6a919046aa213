package audit

import (
	"sync/atomic"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

// The WAL syncer, apart from the audit queue that uses it (audit.go): it
// makes rows committed with synchronous=NORMAL durable without holding the
// writer up.

// walSyncer syncs a database's WAL on request, from a goroutine of its
// own, so that the audit writer goes on with the next batch meanwhile.
// Requests that arrive during a sync are served by one more sync.
type walSyncer struct {
	conn  *rawsqlite.Conn // used by the goroutine only
	log   hclog.Logger
	count *atomic.Uint64 // successful syncs
	req   chan struct{}  // one pending request is enough
	stop  chan struct{}
	done  chan struct{}
}

func startWALSyncer(conn *rawsqlite.Conn, count *atomic.Uint64, log hclog.Logger) *walSyncer {
	s := &walSyncer{conn: conn, count: count, log: log, req: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go s.run()
	return s
}

// request asks for a sync of everything committed so far.
func (s *walSyncer) request() {
	select {
	case s.req <- struct{}{}:
	default:
	}
}

// close serves a pending request, then stops the goroutine and closes its
// connection.
func (s *walSyncer) close() {
	close(s.stop)
	<-s.done
}

func (s *walSyncer) run() {
	defer close(s.done)
	defer s.conn.Close()
	failed := false
	sync := func() {
		// A failure leaves the rows written and readable; the next durable
		// commit (an append, a checkpoint, an agent's write) or the next
		// batch syncs the WAL again. Logged once until a sync succeeds.
		if _, err := s.conn.SyncWAL(); err != nil {
			if !failed {
				s.log.Warn("audit rows are written but the WAL could not be synced after them; a power cut may lose them", "error", err)
			}
			failed = true
			return
		}
		failed = false
		s.count.Add(1)
	}
	for {
		select {
		case <-s.req:
			sync()
		case <-s.stop:
			select {
			case <-s.req:
				sync()
			default:
			}
			return
		}
	}
}
