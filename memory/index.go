package memory

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/policy"
)

// The full-text index (SPEC 5.4). Two FTS5 tables with external content,
// so the text is stored once, in the chain:
//
//   - memory_events_fts(content, kind), rowid = memory_events.id
//   - memory_checkpoints_fts(summary), rowid = memory_checkpoints.id
//
// The tokenizer is unicode61 (Unicode-aware word splitting and case
// folding, for prose in any script) with remove_diacritics 2 ("cafe" finds
// "café", also for letters whose accent is a separate code point) and '_'
// as a token character, so that a snake_case identifier such as
// max_update_rows is one token: searching for it finds it, not every event
// that says "max" or "rows". No stemmer: Porter is English-only and cuts
// identifiers ("caching" and "cache" would match, "orders_7" would not
// change, "ids" becomes "id"); prefix queries (cach*) cover the same need
// on purpose in these two, which agents query with SQL. The recall index
// (memory_recall, below) stems, with identifiers' parts beside them.
//
// The index is kept without triggers. The server writes an event's index
// row in the transaction that appends the event; rows that another program
// appended (the reference server, an older version of this one, a script)
// are indexed at start and by the next append or recall, in id order (a
// long backlog in the background: see backgroundFrom). A
// trigger on memory_events would run inside every other program's INSERT:
// a SQLite built without FTS5 (Python's sqlite3 usually has it, not
// always) could then no longer append to the file at all ("no such module:
// fts5"), and the worker's trusted_schema=OFF connections refuse triggers
// that write virtual tables. Without triggers the file stays exactly as
// appendable by the reference as before; the index can only lag, never
// break an append. The chain is append-only (its triggers refuse UPDATE
// and DELETE), so a lagging index misses the newest rows and is otherwise
// right: bm25's statistics describe the rows it holds.
//
// How far the index reaches is read from the index itself: FTS5 writes one
// row per indexed document into its _docsize table, keyed by rowid, in the
// same transaction as the document, so max(id) there is the last indexed
// event and cannot drift from the index.
const (
	IndexEvents      = policy.IndexEvents
	IndexCheckpoints = policy.IndexCheckpoints
	IndexRecall      = policy.IndexRecall

	// tokenizer is the FTS5 tokenize option of both indexes.
	tokenizer = `unicode61 remove_diacritics 2 tokenchars '_'`
	// recallTokenizer is the recall index's: the same words, stemmed by
	// FTS5's own Porter stemmer (configs finds config, retrying retries).
	recallTokenizer = `porter ` + tokenizer
)

// The recall index (issue 47) is what the recall tool and
// get_resume_context(query=...) rank: a contentless FTS5 table (the text
// is in the chain; the index keeps only its words) over events and
// checkpoint summaries, stemmed, with the parts of every identifier beside
// it in body (recallText) and its adjacent words paired in pairs
// (recallPairs). An event's rowid is its id, a checkpoint's the negative
// of its id, so that one bm25 ranks both over one vocabulary. The
// unstemmed memory_events_fts stays as it was, for agents' SQL and the
// person's view. A recall index of an earlier form (without pairs) is
// dropped at start and built again by the catch-up (upgradeRecallIndex).
var indexDDL = []string{
	`CREATE VIRTUAL TABLE IF NOT EXISTS memory_events_fts USING fts5(content, kind, content='memory_events', content_rowid='id', tokenize="` + tokenizer + `")`,
	`CREATE VIRTUAL TABLE IF NOT EXISTS memory_checkpoints_fts USING fts5(summary, content='memory_checkpoints', content_rowid='id', tokenize="` + tokenizer + `")`,
	`CREATE VIRTUAL TABLE IF NOT EXISTS memory_recall USING fts5(body, kind, pairs, content='', tokenize="` + recallTokenizer + `")`,
}

// indexSpec describes one index: its source table and columns.
type indexSpec struct {
	fts, source string
	columns     string // the FTS columns, also the source's column names
	// last is a statement whose one value is the last source id the index
	// holds: FTS5 writes a _docsize row per document in the document's
	// transaction, so it cannot drift from the index.
	last string
	// recall marks the recall index's specs: their rows are written from
	// Go (recallText), a checkpoint's under the negative of its id.
	recall, checkpoints bool
}

var (
	eventsIndex      = indexSpec{fts: IndexEvents, source: TableEvents, columns: "content, kind", last: `SELECT coalesce(max(id), 0) FROM ` + IndexEvents + `_docsize`}
	checkpointsIndex = indexSpec{fts: IndexCheckpoints, source: TableCheckpoints, columns: "summary", last: `SELECT coalesce(max(id), 0) FROM ` + IndexCheckpoints + `_docsize`}
	recallEvents     = indexSpec{fts: IndexRecall, source: TableEvents, recall: true,
		last: `SELECT coalesce(max(id), 0) FROM ` + IndexRecall + `_docsize WHERE id > 0`}
	recallCheckpoints = indexSpec{fts: IndexRecall, source: TableCheckpoints, recall: true, checkpoints: true,
		last: `SELECT coalesce(-min(id), 0) FROM ` + IndexRecall + `_docsize WHERE id < 0`}

	// allIndexes are the specs the catch-up brings up to date, in order.
	allIndexes = []indexSpec{eventsIndex, checkpointsIndex, recallEvents, recallCheckpoints}
)

// catchUpBatch is how many rows one catch-up transaction indexes, so that a
// long backlog (a big reference file on first start) never holds the write
// lock for long: other programs append between batches.
const catchUpBatch = 5000

// backgroundFrom is the backlog (rows of both indexes) above which the
// catch-up runs on a goroutine of its own instead of before Open returns or
// a recall answers: a reference file of a million events takes 8 s to a
// minute to index (quiet and loaded, docs/performance.md), which a host
// may take for a server that does not start. Meanwhile appends leave the backlog's rows to it (indexUpTo), and
// recall says the index is behind.
const backgroundFrom = 2 * catchUpBatch

// catchUpHook runs as the background catch-up begins; tests hold it there.
var catchUpHook = func(context.Context) {}

// background is the state of the background catch-up.
type background struct {
	mu      sync.Mutex
	running bool
	closed  bool
	cancel  context.CancelFunc
	done    chan struct{}
}

// indexLag is how many rows of both indexes' sources the indexes lack.
func (s *Store) indexLag(ctx context.Context) (int64, error) {
	if !s.fts {
		return 0, nil
	}
	var lag int64
	for _, spec := range allIndexes {
		have, head, err := s.reach(ctx, spec)
		if err != nil {
			return 0, err
		}
		lag += max(head-have, 0)
	}
	return lag, nil
}

// reach is the last rowid spec's index holds and the last of its source.
func (s *Store) reach(ctx context.Context, spec indexSpec) (have, head int64, err error) {
	err = s.db.QueryRowContext(ctx,
		`SELECT (`+spec.last+`), (SELECT coalesce(max(id), 0) FROM `+spec.source+`)`).
		Scan(&have, &head)
	return have, head, err
}

// catchUpSoon brings the index up to date: at once when the lag is small,
// else on a goroutine of its own (one at a time), which Close stops. It
// reports whether a background catch-up is running when it returns.
func (s *Store) catchUpSoon(ctx context.Context) bool {
	if s.catchingUp() {
		return true
	}
	lag, err := s.indexLag(ctx)
	if err == nil && lag <= backgroundFrom {
		if _, err = s.CatchUp(ctx); err == nil {
			return false
		}
	}
	if err != nil {
		// The index lags, it is never wrong: the next append or recall
		// tries again.
		s.log.Warn("could not bring the full-text index up to date; the next append or recall tries again", "error", err)
		return false
	}
	s.catchUpInBackground(lag)
	return s.catchingUp()
}

// catchUpInBackground starts the background catch-up unless it runs or
// the store is closing.
func (s *Store) catchUpInBackground(lag int64) {
	s.bg.mu.Lock()
	defer s.bg.mu.Unlock()
	if s.bg.running || s.bg.closed {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	s.bg.running, s.bg.cancel, s.bg.done = true, cancel, done
	s.log.Info("indexing the memory for full-text recall in the background; recall ranks the older rows once it is done", "rows", lag)
	go func() {
		defer close(done)
		catchUpHook(ctx)
		start := time.Now()
		n, err := s.CatchUp(ctx)
		s.bg.mu.Lock()
		s.bg.running = false
		s.bg.mu.Unlock()
		switch {
		case ctx.Err() != nil:
			s.log.Debug("background indexing stopped by the shutdown; the next start goes on", "rows", n)
		case err != nil:
			s.log.Warn("background indexing of the memory failed; the next append or recall tries again", "rows", n, "error", err)
		default:
			s.log.Info("the memory's full-text index is up to date", "rows", n, "took", time.Since(start).Round(time.Millisecond))
		}
	}()
}

// catchingUp reports whether the background catch-up runs.
func (s *Store) catchingUp() bool {
	s.bg.mu.Lock()
	defer s.bg.mu.Unlock()
	return s.bg.running
}

// stopCatchUp stops the background catch-up (its batch in flight rolls
// back) and waits for it; none starts after.
func (s *Store) stopCatchUp() {
	s.bg.mu.Lock()
	s.bg.closed = true
	cancel, done := s.bg.cancel, s.bg.done
	s.bg.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// createIndex creates the index tables if missing. A failure leaves the
// store without an index (logged): recall then answers from SQL alone, and
// the chain works as before.
func (s *Store) createIndex(ctx context.Context) {
	err := s.upgradeRecallIndex(ctx)
	if err == nil {
		err = bootstrap(ctx, s.db, indexDDL)
	}
	if err == nil {
		s.indexEvents, err = s.db.PrepareContext(ctx, indexSQL(eventsIndex))
	}
	if err == nil {
		s.indexCheckpoints, err = s.db.PrepareContext(ctx, indexSQL(checkpointsIndex))
	}
	if err == nil {
		s.recallSource, err = s.db.PrepareContext(ctx, recallSourceSQL(recallEvents))
	}
	if err == nil {
		s.recallInsert, err = s.db.PrepareContext(ctx, recallInsertSQL)
	}
	if err != nil {
		s.log.Warn("could not create the full-text index of the memory; ranked recall is off for this run", "error", err)
		return
	}
	s.fts = true
}

// recallColumnsCurrent is the column the recall index's current form
// added (recallPairs); an index without it was written in an earlier form.
const recallColumnsCurrent = "pairs"

// upgradeRecallIndex drops a recall index of an earlier form (one without
// the pairs column: its rows lack the pairs a query now searches, so
// recall would miss prose that the identifier's words spell), so that the
// bootstrap creates it anew and the catch-up indexes every row again, as
// for a file that never had one (in the background above backgroundFrom
// rows). The index is contentless: dropping it loses nothing the chain
// does not hold. The check runs again inside the write transaction, so
// that two servers starting together drop it once.
func (s *Store) upgradeRecallIndex(ctx context.Context) error {
	const stale = `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '` + IndexRecall + `'
 AND NOT EXISTS (SELECT 1 FROM pragma_table_xinfo('` + IndexRecall + `') WHERE name = '` + recallColumnsCurrent + `')`
	var n int
	if err := s.db.QueryRowContext(ctx, stale).Scan(&n); err != nil || n == 0 {
		return err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if err := tx.QueryRowContext(ctx, stale).Scan(&n); err != nil || n == 0 {
		return err
	}
	var rows int64
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM `+IndexRecall+`_docsize`).Scan(&rows); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DROP TABLE `+IndexRecall); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	s.log.Info("the recall index was written in an earlier form (no word pairs): it is built again from the memory", "index", IndexRecall, "rows", rows)
	return nil
}

// lastIndexed is the highest rowid spec's index holds (0 when empty).
func lastIndexed(ctx context.Context, q queryRower, spec indexSpec) (int64, error) {
	var n int64
	err := q.QueryRowContext(ctx, spec.last).Scan(&n)
	return n, err
}

// indexSQL is the statement that indexes the rows of spec's source with
// ids in (?1, ?2], in id order.
func indexSQL(spec indexSpec) string {
	return `INSERT INTO ` + spec.fts + `(rowid, ` + spec.columns + `) SELECT id, ` + spec.columns + ` FROM ` + spec.source + ` WHERE id > ? AND id <= ? ORDER BY id`
}

// indexThrough indexes the rows of spec's source with ids in (from, to]
// inside tx, in id order.
func indexThrough(ctx context.Context, tx *sql.Tx, spec indexSpec, from, to int64) error {
	if spec.recall {
		return recallThrough(ctx, tx, nil, nil, spec, from, to)
	}
	_, err := tx.ExecContext(ctx, indexSQL(spec), from, to)
	return err
}

// recallSourceSQL reads the rows of spec's source with ids in (?1, ?2]:
// id, text and kind.
func recallSourceSQL(spec indexSpec) string {
	if spec.checkpoints {
		return `SELECT id, summary, 'checkpoint' FROM ` + TableCheckpoints + ` WHERE id > ? AND id <= ? ORDER BY id`
	}
	return `SELECT id, content, kind FROM ` + TableEvents + ` WHERE id > ? AND id <= ? ORDER BY id`
}

const recallInsertSQL = `INSERT INTO ` + IndexRecall + `(rowid, body, kind, pairs) VALUES (?, ?, ?, ?)`

// recallThrough writes the recall index rows of spec's source rows with ids
// in (from, to], inside tx; source and insert are the store's prepared
// statements (nil: prepared here). The text is read back from the table
// rather than passed in, so the index holds what the chain holds.
func recallThrough(ctx context.Context, tx *sql.Tx, source, insert *sql.Stmt, spec indexSpec, from, to int64) error {
	var rows *sql.Rows
	var err error
	if source != nil && !spec.checkpoints {
		rows, err = tx.StmtContext(ctx, source).QueryContext(ctx, from, to)
	} else {
		rows, err = tx.QueryContext(ctx, recallSourceSQL(spec), from, to)
	}
	if err != nil {
		return err
	}
	type row struct {
		id         int64
		text, kind string
	}
	var batch []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.text, &r.kind); err != nil {
			rows.Close()
			return err
		}
		batch = append(batch, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	var ins *sql.Stmt
	if insert != nil {
		ins = tx.StmtContext(ctx, insert)
	} else if ins, err = tx.PrepareContext(ctx, recallInsertSQL); err != nil {
		return err
	}
	defer ins.Close()
	for _, r := range batch {
		rowid := r.id
		if spec.checkpoints {
			rowid = -r.id
		}
		if _, err := ins.ExecContext(ctx, rowid, recallText(r.text), r.kind, recallPairs(r.text)); err != nil {
			return err
		}
	}
	return nil
}

// indexUpTo indexes, inside tx (which holds the write lock), the rows of
// spec's source up to through, which the transaction has just inserted,
// together with any rows before it that the index lacks: rows another
// program appended since this store last wrote. cache is the last rowid
// this store indexed; when it is through-1, nobody else added a row in
// between and the index need not be asked. A backlog of more than
// catchUpBatch rows is left whole to the catch-up (the index grows in id
// order only), so an append never holds the lock for long: indexed is
// false then, and the caller starts one.
func indexUpTo(ctx context.Context, tx *sql.Tx, stmt *sql.Stmt, spec indexSpec, cache, through int64) (indexed bool, err error) {
	have := cache
	if have != through-1 {
		if have, err = lastIndexed(ctx, tx, spec); err != nil {
			return false, err
		}
	}
	if have >= through {
		return true, nil
	}
	if through-have > catchUpBatch {
		return false, nil
	}
	_, err = tx.StmtContext(ctx, stmt).ExecContext(ctx, have, through)
	return err == nil, err
}

// recallUpTo is indexUpTo for the recall index (spec is recallEvents or
// recallCheckpoints).
func (s *Store) recallUpTo(ctx context.Context, tx *sql.Tx, spec indexSpec, cache, through int64) (indexed bool, err error) {
	have := cache
	if have != through-1 {
		if have, err = lastIndexed(ctx, tx, spec); err != nil {
			return false, err
		}
	}
	if have >= through {
		return true, nil
	}
	if through-have > catchUpBatch {
		return false, nil
	}
	err = recallThrough(ctx, tx, s.recallSource, s.recallInsert, spec, have, through)
	return err == nil, err
}

// CatchUp indexes the events and checkpoints that other programs appended,
// in transactions of catchUpBatch rows, and returns how many rows it
// indexed. Open and recall call it (through catchUpSoon), at once or in
// the background.
func (s *Store) CatchUp(ctx context.Context) (int64, error) {
	if !s.fts {
		return 0, nil
	}
	var total int64
	for _, spec := range allIndexes {
		n, err := s.catchUp(ctx, spec)
		total += n
		if err != nil {
			return total, fmt.Errorf("memory: index %s of %s: %w", spec.fts, spec.source, err)
		}
	}
	return total, nil
}

func (s *Store) catchUp(ctx context.Context, spec indexSpec) (int64, error) {
	if have, head, err := s.reach(ctx, spec); err != nil || have >= head {
		return 0, err // the usual case: nothing to do, and no write lock taken
	} else if head-have > catchUpBatch {
		s.log.Info("indexing memory rows for full-text recall (appended by another program, or older than the index)", "index", spec.fts, "table", spec.source, "rows", head-have)
	}
	var total int64
	start := time.Now()
	for {
		n, done, err := s.catchUpBatch(ctx, spec)
		total += n
		if err != nil || done {
			if total > 0 {
				s.log.Debug("memory index caught up", "index", spec.fts, "table", spec.source, "rows", total, "took", time.Since(start))
			}
			return total, err
		}
	}
}

// catchUpBatch indexes up to catchUpBatch missing rows in one transaction.
func (s *Store) catchUpBatch(ctx context.Context, spec indexSpec) (n int64, done bool, err error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, false, err
	}
	defer func() { _ = tx.Rollback() }()
	have, err := lastIndexed(ctx, tx, spec)
	if err != nil {
		return 0, false, err
	}
	var head int64
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM `+spec.source).Scan(&head); err != nil {
		return 0, false, err
	}
	to := min(head, have+catchUpBatch)
	if to <= have {
		return 0, true, nil
	}
	if err := indexThrough(ctx, tx, spec, have, to); err != nil {
		return 0, false, err
	}
	if err := tx.Commit(); err != nil {
		return 0, false, err
	}
	s.noteIndexed(spec, to)
	return to - have, to == head, nil
}

// noteIndexed remembers the last rowid this store indexed (under writeMu).
func (s *Store) noteIndexed(spec indexSpec, id int64) {
	switch {
	case spec == eventsIndex:
		s.indexedEvents = id
	case spec == checkpointsIndex:
		s.indexedCheckpoints = id
	case spec == recallEvents:
		s.recalledEvents = id
	default:
		s.recalledCheckpoints = id
	}
}
