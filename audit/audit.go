// Package audit records every tool call (SPEC 5): one query_log row a
// call, queued in call order and written when the write lock allows,
// never delaying a reply.
//
// An [Auditor] is where the rows go: a [Queue] on the memory database
// ([ForStore]: the query_log table beside the chain), a [DB] (a separate
// audit file, for the read-only profile, which must never write to its
// database), a logger ([NewLog]), or several of them ([Multi]).
//
// Queues write rows from one goroutine, several per transaction: a lock
// held by another process delays rows, never a call, and rows are retried
// until written; closing writes the queue (waiting up to [FlushTimeout]).
// A crash loses only the rows still queued. [Entry.Bound] caps what a
// row can hold, so a call cannot grow the log without bound.
//
// Imports memory (the schema, the store it shares a database with) and
// rawsqlite; memory never imports it.
package audit

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/memory"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

// Entry is one tool call, one query_log row.
type Entry struct {
	// TS is when the call started; zero means now. Stored as
	// memory.TimeLayout.
	TS      time.Time
	Session string
	Tool    string
	// Query is the agent's SQL (or the tool's main argument); NULL when
	// the tool has none.
	Query sql.NullString
	OK    bool
	// Rows is the rows returned or affected; NULL when not applicable.
	Rows sql.NullInt64
	// Error is the error text the agent saw; "" is stored as NULL.
	Error    string
	Duration time.Duration // stored as whole milliseconds
	// Detail (limits, reasons, snapshot paths, previous view SQL) is
	// stored as a JSON object; nil or empty is NULL, as in the reference.
	Detail map[string]any
}

// DefaultQueryBytes is how much of a query an audit row keeps by
// default (--audit-query-bytes).
const DefaultQueryBytes = 64 << 10

// Bound caps what one row can add to the log, so that no call (a read
// included) can grow the file by more than about three times max bytes:
//   - a query longer than max bytes keeps its first max bytes, cut at a
//     character boundary; detail gets query_bytes (the full length) and
//     query_sha256 (of the full text);
//   - an error text longer than max is cut likewise, with a note;
//   - a detail whose JSON is longer than max (agent text inside it, such as
//     a search's where) is replaced by detail_bytes, detail_sha256 and
//     detail_prefix.
//
// max <= 0 leaves e as it is.
func (e *Entry) Bound(max int) {
	if max <= 0 {
		return
	}
	if len(e.Detail) > 0 {
		if j := DetailJSON(e.Detail); len(j) > max {
			e.Detail = map[string]any{"detail_bytes": len(j), "detail_sha256": sha256Hex(j), "detail_prefix": cutUTF8(j, max)}
		}
	}
	if e.Query.Valid && len(e.Query.String) > max {
		q := e.Query.String
		detail := make(map[string]any, len(e.Detail)+2)
		for k, v := range e.Detail {
			detail[k] = v
		}
		detail["query_bytes"], detail["query_sha256"] = len(q), sha256Hex(q)
		e.Detail = detail
		e.Query.String = cutUTF8(q, max)
	}
	if len(e.Error) > max {
		cut := cutUTF8(e.Error, max)
		e.Error = fmt.Sprintf("%s...[+%d bytes]", cut, len(e.Error)-len(cut))
	}
}

// cutUTF8 returns the longest prefix of s of at most max bytes that does not
// split a character.
func cutUTF8(s string, max int) string {
	if len(s) <= max {
		return s
	}
	n := max
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func sha256Hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// Auditor records tool calls. An Auditor must be safe for concurrent use.
type Auditor interface {
	// Audit records e; a queueing Auditor returns before the row is
	// written (SPEC 5: audit rows never delay a reply).
	Audit(ctx context.Context, e Entry) error
	// AwaitAudit waits, briefly and only while rows flow, until the rows
	// recorded before it are readable: the server runs it before each
	// call, so a call reads the rows of the calls answered before it. An
	// Auditor that writes at once, or nowhere readable, returns at once.
	AwaitAudit()
}

// ForStore returns the queue of the memory database's query_log: it
// shares the store's connections and write mutex (appends and audit
// batches of this process take turns), and the store's Close writes what
// is queued before its connections close. It starts writing with the
// first row, because a store opened for verify may have no query_log.
func ForStore(s *memory.Store) *Queue {
	var q *Queue
	sh := s.Share(func() { q.Close() })
	q = newQueue(sh.DB, sh.Path, sh.Durable, sh.WriteMu, sh.Now, sh.Log)
	return q
}

// WriteTx writes one query_log row inside tx, a write transaction the
// caller began on a connection of the memory database (see
// memory.Store.Begin), instead of queueing it: the row commits with the
// caller's other changes, or not at all. A zero TS is now.
func WriteTx(ctx context.Context, tx *sql.Tx, e Entry) error {
	r := newRow(e, time.Now)
	if _, err := tx.ExecContext(ctx, insertAudit, r.ts, r.session, r.tool, r.query, r.ok, r.rows, r.errText, r.durationMS, r.detail); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	return nil
}

// DB is a separate audit file (--audit-db), for the read-only profile:
// it holds only query_log, its index and triggers, and the query_errors
// view.
type DB struct {
	db   *sql.DB
	path string
	q    *Queue
}

var (
	_ Auditor = (*DB)(nil)
	_ Auditor = (*Queue)(nil)
)

// Open opens or creates the audit database at path (and its parent
// folder), in WAL mode, with the query_log part of the server schema.
func Open(ctx context.Context, path string, log hclog.Logger) (*DB, error) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	db, abs, err := memory.OpenQueryLog(ctx, path, log)
	if err != nil {
		return nil, err
	}
	return &DB{db: db, path: abs, q: newQueue(db, abs, true, new(sync.Mutex), time.Now, log)}, nil
}

// Audit queues one query_log row for the audit file; it never waits for
// the database.
func (a *DB) Audit(ctx context.Context, e Entry) error { return a.q.Audit(ctx, e) }

// FlushAudit waits until every row queued before the call is written, or
// ctx ends.
func (a *DB) FlushAudit(ctx context.Context) error { return a.q.FlushAudit(ctx) }

// AwaitAudit is [Queue.AwaitAudit] for the audit file.
func (a *DB) AwaitAudit() { a.q.AwaitAudit() }

// Path returns the absolute path of the audit file.
func (a *DB) Path() string { return a.path }

// Close writes the queued rows (see FlushTimeout) and closes the
// audit file.
func (a *DB) Close() error {
	a.q.Close()
	return a.db.Close()
}

// Audit queue settings; variables so that tests can shorten them.
var (
	// FlushTimeout bounds how long closing waits for the write lock to
	// write the rows still queued; rows it cannot write are logged at
	// Error level, each in full, instead.
	FlushTimeout = 10 * time.Second
	// auditBusyTimeout is one write attempt's wait for the lock.
	auditBusyTimeout = 20 * time.Millisecond
	// auditSettle bounds how long AwaitAudit waits for earlier rows while
	// rows are flowing (see Queue).
	auditSettle = 50 * time.Millisecond
	// auditRetryMax is the longest pause between attempts.
	auditRetryMax = time.Second
	// auditWarnAfter is how long rows wait before the episode is logged:
	// another server's quick commit is not worth a line.
	auditWarnAfter = time.Second
)

// auditBatchMax bounds the rows of one transaction.
const auditBatchMax = 256

// auditQueueMax bounds the bytes of the rows waiting in memory, so that a
// lock held for hours while calls go on cannot exhaust the front's memory.
// A row that does not fit is logged in full at Error level instead (the
// only way a row misses the table while the server runs). A variable so
// that tests can lower it.
var auditQueueMax = 64 << 20

// ErrClosed: a row arrived after the audit log was closed; it is
// logged instead.
var ErrClosed = errors.New("audit: audit log closed; the row was logged instead")

// Queue is a query_log queue (the memory database's, ForStore, or the
// audit file's, DB). Rows are
// queued in the order Audit is called and written by one goroutine, several
// in one transaction when several wait, as soon as the write lock allows. A
// lock held by another process only delays the rows, which are retried
// without limit while the log is open (one Warn line when they start
// waiting, one Info line when they are written). Closing writes what is
// queued, waiting up to FlushTimeout.
//
// Audit never waits for its row: a reply goes out while its row is
// written (SPEC 5). Read-your-writes is kept by the next call instead:
// AwaitAudit, which the server runs before each tool call, waits while
// rows flow (the last write succeeded) until every row queued before it is
// written, which takes well under a millisecond and at most auditSettle
// (an agent reading query_errors right after a failed call sees it;
// paced calls find their rows long written and never wait). Once a write
// has failed, until one succeeds, it waits for nothing.
//
// Durability: in WAL mode a batch commits with synchronous=NORMAL, so that
// its rows are readable (and the next call proceeds) without waiting for
// the disk, and a goroutine of its own then syncs the WAL (see
// rawsqlite.Conn.SyncWAL) while the next batch is written: at most one sync
// per batch, never per row, and never on a reply's path. A power cut can
// lose only the rows committed since the last sync (the rows of a
// millisecond or two). In a database left in rollback mode each batch
// commits with synchronous=FULL instead.
type Queue struct {
	db   *sql.DB
	path string      // the database file, for the syncer
	mu   *sync.Mutex // the owner's write mutex, held while a batch is written
	now  func() time.Time
	log  hclog.Logger

	qmu      sync.Mutex
	queue    []queuedRow
	bytes    int           // size of the rows in queue
	queued   uint64        // rows ever queued
	written  uint64        // rows ever written
	progress chan struct{} // closed and replaced whenever rows are written or stop flowing
	flowing  bool          // false from a failed write until a write succeeds
	started  bool
	closed   bool
	wake     chan struct{} // one pending wake-up is enough
	stop     chan struct{} // closed by close
	done     chan struct{} // closed when the writer goroutine has ended

	// Used by the writer goroutine only.
	conn *sql.Conn
	stmt *sql.Stmt
	// durable: sync what is written (false only for the benchmark's
	// synchronous=NORMAL yardstick). syncer syncs the WAL after the batches
	// (nil in rollback mode).
	durable bool
	syncer  *walSyncer
	// batches and syncs count committed batches and WAL syncs after them,
	// for tests.
	batches, syncs atomic.Uint64
}

// queuedRow is one query_log row, ready to insert.
type queuedRow struct {
	ts, session, tool string
	query             sql.NullString
	ok                int
	rows              sql.NullInt64
	errText, detail   sql.NullString
	durationMS        int64
}

func (r *queuedRow) size() int {
	return 64 + len(r.ts) + len(r.session) + len(r.tool) + len(r.query.String) + len(r.errText.String) + len(r.detail.String)
}

func newQueue(db *sql.DB, path string, durable bool, mu *sync.Mutex, now func() time.Time, log hclog.Logger) *Queue {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &Queue{
		db: db, path: path, durable: durable, mu: mu, now: now, log: log,
		progress: make(chan struct{}),
		flowing:  true,
		wake:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
}

const insertAudit = `INSERT INTO query_log (ts, session, tool, query, ok, rows, error, duration_ms, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`

// newRow is e as a row; a zero TS is now().
func newRow(e Entry, now func() time.Time) queuedRow {
	ts := e.TS
	if ts.IsZero() {
		ts = now()
	}
	r := queuedRow{
		ts: ts.UTC().Format(memory.TimeLayout), session: e.Session, tool: e.Tool, query: e.Query,
		rows: e.Rows, durationMS: e.Duration.Milliseconds(),
	}
	if e.Error != "" {
		r.errText = sql.NullString{String: e.Error, Valid: true}
	}
	if len(e.Detail) > 0 {
		r.detail = sql.NullString{String: DetailJSON(e.Detail), Valid: true}
	}
	if e.OK {
		r.ok = 1
	}
	return r
}

// Audit queues e and wakes the writer goroutine; it does not wait for the
// row (SPEC 5: audit rows never delay a reply). [Queue.AwaitAudit], at
// the start of the next call, keeps read-your-writes. ctx is not used:
// the row outlives the call.
func (w *Queue) Audit(_ context.Context, e Entry) error {
	return w.enqueue(e)
}

// AwaitAudit waits, while rows flow and for at most 50 ms (auditSettle),
// until every row queued before it is written: run before a call, it lets
// the call read the rows of the calls answered before it.
func (w *Queue) AwaitAudit() {
	w.qmu.Lock()
	seq, done := w.queued, w.written >= w.queued || !w.flowing
	w.qmu.Unlock()
	if !done {
		w.await(seq, time.Now().Add(auditSettle))
	}
}

// await waits for row seq while rows flow, until settleBy.
func (w *Queue) await(seq uint64, settleBy time.Time) {
	t := time.NewTimer(time.Until(settleBy))
	defer t.Stop()
	w.qmu.Lock()
	for w.written < seq && w.flowing {
		ch := w.progress
		w.qmu.Unlock()
		select {
		case <-ch:
		case <-t.C:
			return
		case <-w.done:
			return
		}
		w.qmu.Lock()
	}
	w.qmu.Unlock()
}

// enqueue queues e and wakes the writer goroutine (starting it with the
// first row, so that a store that is only read, verify, never starts one).
func (w *Queue) enqueue(e Entry) error {
	r := newRow(e, w.now)
	w.qmu.Lock()
	if w.closed {
		w.qmu.Unlock()
		w.logLost("audit row arrived after the audit log was closed", []queuedRow{r})
		return ErrClosed
	}
	if w.bytes+r.size() > auditQueueMax && len(w.queue) > 0 {
		w.qmu.Unlock()
		w.logLost("audit row not queued: the rows waiting for the database fill the queue", []queuedRow{r})
		return nil
	}
	w.queue = append(w.queue, r)
	w.bytes += r.size()
	w.queued++
	if !w.started {
		w.started = true
		go w.run()
	}
	w.qmu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default: // one pending wake-up is enough
	}
	return nil
}

// signal wakes everyone waiting on progress; call with qmu held.
func (w *Queue) signal() {
	close(w.progress)
	w.progress = make(chan struct{})
}

// FlushAudit waits until every row queued before the call is written, or
// ctx ends.
func (w *Queue) FlushAudit(ctx context.Context) error {
	w.qmu.Lock()
	target := w.queued
	for w.written < target {
		if w.closed && !w.running() {
			w.qmu.Unlock()
			return ErrClosed
		}
		ch := w.progress
		w.qmu.Unlock()
		select {
		case <-ch:
		case <-w.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		w.qmu.Lock()
	}
	w.qmu.Unlock()
	return nil
}

func (w *Queue) running() bool {
	select {
	case <-w.done:
		return false
	default:
		return w.started
	}
}

// run is the writer goroutine.
func (w *Queue) run() {
	defer close(w.done)
	defer w.release()
	pause := 10 * time.Millisecond
	var waitingSince, flushBy time.Time
	stopping, warned := false, false
	for {
		if w.pending() == 0 {
			if stopping {
				return
			}
			select {
			case <-w.wake:
			case <-w.stop:
				stopping, flushBy = true, time.Now().Add(FlushTimeout)
			}
			continue
		}
		err := w.writeQueued()
		if err == nil {
			left := w.pending()
			if warned {
				w.log.Info("audit rows written after waiting", "waited", time.Since(waitingSince).Round(time.Millisecond).String(), "still_queued", left)
			}
			waitingSince, warned = time.Time{}, false
			pause = 10 * time.Millisecond
			continue
		}
		if waitingSince.IsZero() {
			waitingSince = time.Now()
			w.qmu.Lock()
			w.flowing = false
			w.signal()
			w.qmu.Unlock()
		}
		if !warned && time.Since(waitingSince) >= auditWarnAfter {
			warned = true
			w.log.Warn("audit rows are waiting: the database refused the write (another connection holds the write lock?); they stay queued in order and are retried until written", "queued", w.pending(), "error", err)
		}
		if stopping && time.Now().After(flushBy) {
			w.qmu.Lock()
			lost := w.queue
			w.queue, w.bytes = nil, 0
			w.qmu.Unlock()
			w.logLost(fmt.Sprintf("audit row not written: the database still refused it %s after shutdown began", FlushTimeout), lost)
			return
		}
		stop := w.stop
		if stopping {
			stop = nil // closed: it would end every pause at once
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-stop:
			stopping, flushBy = true, time.Now().Add(FlushTimeout)
		}
		t.Stop()
		pause = min(2*pause, auditRetryMax)
	}
}

// writeQueued writes the oldest queued rows (at most auditBatchMax) in one
// transaction and counts them written; nothing queued is no error.
func (w *Queue) writeQueued() error {
	w.qmu.Lock()
	n := min(len(w.queue), auditBatchMax)
	batch := w.queue[:n:n]
	w.qmu.Unlock()
	if n == 0 {
		return nil
	}
	w.mu.Lock()
	err := w.write(batch)
	w.mu.Unlock()
	if err != nil {
		return err
	}
	w.qmu.Lock()
	for i := range batch {
		w.bytes -= batch[i].size()
	}
	w.queue = w.queue[n:]
	w.written += uint64(n)
	w.flowing = true
	w.signal()
	w.qmu.Unlock()
	w.batches.Add(1)
	if w.syncer != nil {
		w.syncer.request()
	}
	return nil
}

func (w *Queue) pending() int {
	w.qmu.Lock()
	defer w.qmu.Unlock()
	return len(w.queue)
}

// write inserts rows in one transaction on the writer's own connection,
// whose busy timeout is short: the retry loop, not SQLite's busy handler,
// does the waiting, so shutdown is never stuck behind a lock.
// Call with the owner's write mutex held.
func (w *Queue) write(rows []queuedRow) (err error) {
	ctx := context.Background()
	if w.conn == nil {
		conn, err := w.db.Conn(ctx)
		if err != nil {
			return err
		}
		if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", auditBusyTimeout.Milliseconds())); err != nil {
			conn.Close()
			return err
		}
		st, err := conn.PrepareContext(ctx, insertAudit)
		if err != nil {
			conn.Close()
			return err
		}
		w.conn, w.stmt = conn, st
		w.openSyncer(ctx)
	}
	defer func() {
		if err != nil {
			_, _ = w.conn.ExecContext(ctx, "ROLLBACK")
			if c := sqliteCode(err); c != sqlite3.SQLITE_BUSY && c != sqlite3.SQLITE_LOCKED {
				// Not a lock: start afresh with another connection.
				w.release()
			}
		}
	}()
	if _, err := w.conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	for _, r := range rows {
		if _, err := w.stmt.ExecContext(ctx, r.ts, r.session, r.tool, r.query, r.ok, r.rows, r.errText, r.durationMS, r.detail); err != nil {
			return err
		}
	}
	_, err = w.conn.ExecContext(ctx, "COMMIT")
	return err
}

// openSyncer readies the per-batch sync (see Queue) when the
// database is in WAL mode: the writer's connection commits with
// synchronous=NORMAL and a connection of SQLite's own syncs the WAL after
// the batches. Otherwise, or if that connection cannot be opened, the
// writer's connection keeps synchronous=FULL and every batch's commit
// syncs.
func (w *Queue) openSyncer(ctx context.Context) {
	var mode string
	if !w.durable {
		return
	}
	if err := w.conn.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		return
	}
	conn, err := rawsqlite.Open(w.path, rawsqlite.ReadWrite)
	if err != nil {
		w.log.Debug("audit rows are synced at each commit: no connection to sync the WAL", "error", err)
		return
	}
	if _, err := w.conn.ExecContext(ctx, "PRAGMA synchronous=NORMAL"); err != nil {
		conn.Close()
		return
	}
	w.syncer = startWALSyncer(conn, &w.syncs, w.log)
}

// release gives the writer's connection back, or discards it when it was
// switched to synchronous=NORMAL: the pool's other users (appends) must
// never get a connection that does not sync its commits.
func (w *Queue) release() {
	normal := w.syncer != nil
	if w.syncer != nil {
		w.syncer.close()
		w.syncer = nil
	}
	if w.stmt != nil {
		w.stmt.Close()
		w.stmt = nil
	}
	if w.conn != nil {
		if normal {
			_ = w.conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		w.conn.Close()
		w.conn = nil
	}
}

// logLost writes rows that will never reach the database to the log, each
// in full, so that the trail survives on stderr.
func (w *Queue) logLost(msg string, rows []queuedRow) {
	for _, r := range rows {
		w.log.Error(msg, "ts", r.ts, "session", r.session, "tool", r.tool, "query", r.query.String,
			"ok", r.ok == 1, "rows", r.rows.Int64, "error", r.errText.String, "duration_ms", r.durationMS, "detail", r.detail.String)
	}
}

// Close writes what is queued (waiting up to FlushTimeout for the lock)
// and stops the writer. It is safe to call twice.
func (w *Queue) Close() {
	w.qmu.Lock()
	first := !w.closed
	w.closed = true
	started := w.started
	w.qmu.Unlock()
	if first {
		close(w.stop)
	}
	if started {
		<-w.done
	}
}

// NewLog returns an Auditor that only logs each call (at Info, or
// Warn for failures) through log: the read-only profile's audit trail on
// stderr.
func NewLog(log hclog.Logger) Auditor {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return logAuditor{log: log}
}

type logAuditor struct{ log hclog.Logger }

// AwaitAudit returns at once: the log is written as Audit is called.
func (logAuditor) AwaitAudit() {}

func (l logAuditor) Audit(_ context.Context, e Entry) error {
	args := []any{"session", e.Session, "tool", e.Tool, "ok", e.OK, "duration_ms", e.Duration.Milliseconds()}
	if e.Query.Valid {
		args = append(args, "query", e.Query.String)
	}
	if e.Rows.Valid {
		args = append(args, "rows", e.Rows.Int64)
	}
	if e.Error != "" {
		args = append(args, "error", e.Error)
	}
	if len(e.Detail) > 0 {
		args = append(args, "detail", DetailJSON(e.Detail))
	}
	if e.OK {
		l.log.Info("audit", args...)
	} else {
		l.log.Warn("audit", args...)
	}
	return nil
}

// Multi writes every entry to each of auditors (nil ones skipped) and
// joins their errors: one failing sink does not stop the others.
func Multi(auditors ...Auditor) Auditor {
	var list multiAuditor
	for _, a := range auditors {
		if a != nil {
			list = append(list, a)
		}
	}
	return list
}

type multiAuditor []Auditor

// AwaitAudit runs AwaitAudit of each auditor.
func (m multiAuditor) AwaitAudit() {
	for _, a := range m {
		a.AwaitAudit()
	}
}

func (m multiAuditor) Audit(ctx context.Context, e Entry) error {
	var errs []error
	for _, a := range m {
		if err := a.Audit(ctx, e); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// sqliteCode returns the primary SQLite result code of err, or 0.
func sqliteCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() & 0xff
	}
	return 0
}
