package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

// BusyTimeout is how long every connection waits for a lock held by another
// connection or process before failing with SQLITE_BUSY.
const BusyTimeout = 5 * time.Second

// Errors. Callers map ErrEmptyContent and ErrEmptySummary to INVALID_ARGUMENT,
// the others to DATABASE_UNAVAILABLE (or a startup error).
var (
	// ErrNotDatabase: the file exists but is not a SQLite database. It is
	// left unchanged.
	ErrNotDatabase = errors.New("file is not a SQLite database")
	// ErrNoChain: OpenExisting found no memory_events table.
	ErrNoChain = errors.New("no memory_events table (not a mcp-sqlite-memory database)")
	// ErrSchemaMismatch: a server table exists with other columns.
	ErrSchemaMismatch = errors.New("server table has unexpected columns")
	// ErrEmptyContent: append_event content is empty after stripping.
	ErrEmptyContent = errors.New("content must not be empty")
	// ErrEmptySummary: checkpoint summary is empty after stripping.
	ErrEmptySummary = errors.New("summary must not be empty")
	// ErrNotStored: an append or checkpoint inserted no row, another row,
	// or more than one (a trigger another program installed, such as
	// BEFORE INSERT ... RAISE(IGNORE), changed what the INSERT did). The
	// transaction is rolled back; nothing is claimed written.
	ErrNotStored = errors.New("the row was not stored as written")
	// ErrBusy: another connection or process held the lock for longer
	// than BusyTimeout (SQLITE_BUSY or SQLITE_LOCKED). The errors of
	// Append, Checkpoint, ResumeContext and Verify match it (errors.Is)
	// when that was their cause; their text stays SQLite's.
	ErrBusy = errors.New("the database is busy")
)

// busyError is an error caused by a lock: it matches ErrBusy and unwraps
// to its cause.
type busyError struct{ err error }

func (e busyError) Error() string   { return e.err.Error() }
func (e busyError) Unwrap() []error { return []error{ErrBusy, e.err} }

// markBusy makes err match ErrBusy when a lock caused it.
func markBusy(err error) error {
	var raw *rawsqlite.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &raw) && (raw.Primary() == rawsqlite.ResultBusy || raw.Primary() == rawsqlite.ResultLocked):
	case sqliteCode(err) == sqlite3.SQLITE_BUSY || sqliteCode(err) == sqlite3.SQLITE_LOCKED:
	default:
		return err
	}
	return busyError{err}
}

// Event is one row of memory_events.
type Event struct {
	ID       int64
	TS       string
	Session  string
	Kind     string
	Content  string
	PrevHash string
	Hash     string
}

// Checkpoint is one row of memory_checkpoints: a summary anchored to the
// chain head (LastEventID 0 and GenesisHash for an empty chain).
type Checkpoint struct {
	ID          int64
	TS          string
	Session     string
	Summary     string
	LastEventID int64
	HeadHash    string
}

// Store is the memory layer of one database file. It is safe for concurrent
// use.
type Store struct {
	db   *sql.DB
	path string
	log  hclog.Logger
	now  func() time.Time // tests pin the clock

	// writeMu serialises this process's writers: SQLite would order them
	// anyway, but through busy-handler sleeps.
	writeMu     sync.Mutex
	headStmt    *sql.Stmt
	insertEvent *sql.Stmt
	// closeFirst are what Share's borrowers asked Close to run before the
	// connections close (the audit queue writes its rows).
	closeFirst struct {
		sync.Mutex
		fns []func()
	}
	// durable: commits sync (synchronous=FULL), what a borrower's writes
	// must match.
	durable bool
	// fts is true when the full-text index exists (Open made it);
	// indexedEvents and indexedCheckpoints are the last rowids this store
	// indexed (under writeMu), see indexUpTo.
	fts                               bool
	indexedEvents, indexedCheckpoints int64
	indexEvents, indexCheckpoints     *sql.Stmt // indexSQL, prepared
	// The recall index's likewise (recallUpTo), and its statements;
	// noRecall leaves it unwritten by appends (the benchmark's yardstick).
	recalledEvents, recalledCheckpoints int64
	noRecall                            bool
	recallSource, recallInsert          *sql.Stmt
	// emb, when set (UseEmbeddings), writes a vector beside each row and
	// recall fuses with them as fusion says.
	emb          Embedder
	fusion       Fusion
	vectorInsert *sql.Stmt  // vectorInsertSQL, prepared by UseEmbeddings
	bg           background // the catch-up of a long backlog
	// opened is what Open changed in a file that was there (Opened).
	opened Opened
	// verifiers keeps one idle chain verifier between calls (see Verify).
	verifiers struct {
		sync.Mutex
		idle   *verifier
		closed bool
	}
}

// Opened is what Open changed in the file: the schema objects it created
// (tables, indexes, triggers, the full-text index) and whether it switched
// the file to WAL. Both are empty for a memory database opened again.
type Opened struct {
	Added []string
	WAL   bool
}

// Opened says what Open changed in the file.
func (s *Store) Opened() Opened { return s.opened }

// objectNames are the names in sqlite_master, sorted.
func objectNames(ctx context.Context, db *sql.DB) ([]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_master ORDER BY name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		names = append(names, name)
	}
	return names, rows.Err()
}

// Open opens the memory database at path for the server: it creates the
// parent folder and the file if missing, refuses a file that is not SQLite
// (ErrNotDatabase, file untouched), switches the file to WAL once, and
// creates whatever of the server schema is missing (SPEC 5). Objects that
// exist are left alone, so a reference file's sqlite_master is unchanged.
// A schema in which an object the server did not create references the
// server tables is refused with a *ForeignObjectsError (ErrForeignObjects).
func Open(ctx context.Context, path string, log hclog.Logger) (*Store, error) {
	return open(ctx, path, synchronousFull, log)
}

// open is Open with the connection's synchronous level: the server always
// uses synchronousFull; the benchmark compares it with synchronousNormal.
func open(ctx context.Context, path, syncLevel string, log hclog.Logger) (*Store, error) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	db, abs, switched, err := create(ctx, path, "database", syncLevel, log)
	if err != nil {
		return nil, err
	}
	before, err := objectNames(ctx, db)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("memory: %s: %w", abs, err)
	}
	if err := checkColumns(ctx, db, TableEvents, TableCheckpoints, TableQueryLog); err != nil {
		db.Close()
		return nil, fmt.Errorf("memory: %s: %w", abs, err)
	}
	if err := bootstrap(ctx, db, slices.Concat(eventsDDL, auditDDL)); err != nil {
		db.Close()
		return nil, fmt.Errorf("memory: bootstrap %s: %w", abs, err)
	}
	// The server tables defend themselves: no object another program
	// added may run inside the server's writes (foreign.go).
	if err := checkForeign(abs); err != nil {
		db.Close()
		return nil, err
	}
	s, err := newStore(ctx, db, abs, syncLevel, log)
	if err != nil {
		return nil, err
	}
	s.createIndex(ctx)
	if after, err := objectNames(ctx, db); err == nil {
		for _, name := range after {
			if !slices.Contains(before, name) {
				s.opened.Added = append(s.opened.Added, name)
			}
		}
	}
	s.opened.WAL = switched
	// Rows other programs appended: indexed before Open returns when they
	// are few, in the background when they are many (a big reference file
	// on first start must not keep the server from answering).
	s.catchUpSoon(ctx)
	return s, nil
}

// OpenExisting opens an existing memory database without creating or
// changing anything (no bootstrap, no journal mode change), for the offline
// verify command. A missing file is an fs.ErrNotExist error, a file that is
// not SQLite ErrNotDatabase, a database without memory_events ErrNoChain.
func OpenExisting(ctx context.Context, path string, log hclog.Logger) (*Store, error) {
	return openExisting(ctx, path, log, func(abs string) (*sql.DB, error) {
		db, _, err := openDB(ctx, abs, false, synchronousFull, log)
		return db, err
	})
}

// openExisting is OpenExisting and OpenReadOnly: the path checks, then the
// database open opens (its errors returned as they are), then the chain's
// table and its columns.
func openExisting(ctx context.Context, path string, log hclog.Logger, open func(abs string) (*sql.DB, error)) (*Store, error) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	db, err := open(abs)
	if err != nil {
		return nil, err
	}
	var n int
	err = db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, TableEvents).Scan(&n)
	switch {
	case sqliteCode(err) == sqlite3.SQLITE_NOTADB:
		err = ErrNotDatabase
	case err == nil && n == 0:
		err = ErrNoChain
	case err == nil:
		err = checkColumns(ctx, db, TableEvents)
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("memory: %s: %w", abs, err)
	}
	return newStore(ctx, db, abs, synchronousFull, log)
}

func newStore(ctx context.Context, db *sql.DB, path, syncLevel string, log hclog.Logger) (*Store, error) {
	s := &Store{db: db, path: path, log: log, now: time.Now}
	var err error
	if s.headStmt, err = db.PrepareContext(ctx, `SELECT id, hash FROM memory_events ORDER BY id DESC LIMIT 1`); err == nil {
		s.insertEvent, err = db.PrepareContext(ctx,
			`INSERT INTO memory_events (id, ts, session, kind, content, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?)`)
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("memory: prepare: %w", err)
	}
	s.durable = syncLevel == synchronousFull
	return s, nil
}

// Shared is what a writer of the store's database borrows from the store
// (the audit queue, package audit, writes query_log through it): the
// connection pool, the file, the mutex that serialises this process's
// writers, the store's clock, and whether commits must sync.
type Shared struct {
	DB      *sql.DB
	Path    string
	WriteMu *sync.Mutex
	Now     func() time.Time
	Durable bool
	Log     hclog.Logger
}

// Share lends the store's database to another writer; onClose, when not
// nil, runs when the store closes, before its connections do (so that the
// borrower finishes its writes).
func (s *Store) Share(onClose func()) Shared {
	if onClose != nil {
		s.closeFirst.Lock()
		s.closeFirst.fns = append(s.closeFirst.fns, onClose)
		s.closeFirst.Unlock()
	}
	return Shared{DB: s.db, Path: s.path, WriteMu: &s.writeMu, Now: func() time.Time { return s.now() }, Durable: s.durable, Log: s.log}
}

// OpenQueryLog opens or creates a database at path (and its parent
// folder) that holds only the query_log part of the server schema, in WAL
// mode with synchronous=FULL: the read-only profile's separate audit file
// (package audit's Open). It returns the pool and the absolute path.
func OpenQueryLog(ctx context.Context, path string, log hclog.Logger) (*sql.DB, string, error) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	db, abs, _, err := create(ctx, path, "audit", synchronousFull, log)
	if err != nil {
		return nil, "", err
	}
	if err = checkColumns(ctx, db, TableQueryLog); err == nil {
		err = bootstrap(ctx, db, auditDDL)
	}
	if err != nil {
		db.Close()
		return nil, "", fmt.Errorf("memory: audit database %s: %w", abs, err)
	}
	return db, abs, nil
}

// Synchronous levels (PRAGMA synchronous) of the memory connections.
//
// synchronousFull is what the server runs: in WAL mode SQLite syncs the
// WAL at every commit, before the commit returns, so an answer that says a
// row was written (append_event, checkpoint, an audit batch) is sent only
// once the row survives a power cut (SPEC 5). synchronousNormal, SQLite's
// usual WAL choice and this server's before, syncs only at checkpoints: a
// commit is atomic and consistent but the last ones can be lost by a power
// cut or a kernel crash; the benchmark measures it as the yardstick.
const (
	synchronousFull   = "FULL"
	synchronousNormal = "NORMAL"
)

// create opens the database at path, creating it and its folder (what
// names the file in the folder's error: "database", "audit"), and returns
// it with its absolute path and whether it switched the file to WAL.
func create(ctx context.Context, path, what, syncLevel string, log hclog.Logger) (*sql.DB, string, bool, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, "", false, fmt.Errorf("memory: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return nil, "", false, fmt.Errorf("memory: create %s folder: %w", what, err)
	}
	db, switched, err := openDB(ctx, abs, true, syncLevel, log)
	return db, abs, switched, err
}

// openDB opens a pool on the file and checks that it is SQLite. With create
// it also switches the file to WAL (persistent, so done once, not per
// connection), and says whether it did. syncLevel is the connections'
// PRAGMA synchronous.
func openDB(ctx context.Context, abs string, create bool, syncLevel string, log hclog.Logger) (db *sql.DB, switched bool, err error) {
	db, err = sql.Open("sqlite", dsn(abs, create, syncLevel))
	if err != nil {
		return nil, false, fmt.Errorf("memory: open %s: %w", abs, err)
	}
	// A few connections: one writer at a time (writeMu) plus readers for
	// verify and resume context, which WAL lets run beside the writer.
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(4)

	// Reading the schema reads the header: the first point where SQLite
	// notices a file that is not a database. Nothing is written before it.
	var v int64
	if err := db.QueryRowContext(ctx, `PRAGMA schema_version`).Scan(&v); err != nil {
		db.Close()
		if sqliteCode(err) == sqlite3.SQLITE_NOTADB {
			return nil, false, fmt.Errorf("memory: %s: %w", abs, ErrNotDatabase)
		}
		return nil, false, fmt.Errorf("memory: open %s: %w", abs, err)
	}
	if !create {
		return db, false, nil
	}
	var mode string
	if err := db.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		db.Close()
		return nil, false, fmt.Errorf("memory: read journal mode of %s: %w", abs, err)
	}
	if !strings.EqualFold(mode, "wal") {
		// Needs a moment without other connections; when another program
		// holds the file we carry on in its mode: appends stay atomic.
		if err := db.QueryRowContext(ctx, `PRAGMA journal_mode=WAL`).Scan(&mode); err != nil {
			log.Warn("could not switch the database to WAL; continuing", "path", abs, "mode", mode, "error", err)
		} else if !strings.EqualFold(mode, "wal") {
			log.Warn("database is not in WAL mode; continuing", "path", abs, "mode", mode)
		} else {
			log.Debug("database switched to WAL", "path", abs)
			switched = true
		}
	}
	return db, switched, nil
}

// dsn builds a file: URI (so any path character is escaped) with the
// per-connection settings: busy timeout, the synchronous level, and BEGIN
// IMMEDIATE for every read-write transaction.
func dsn(abs string, create bool, syncLevel string) string {
	q := "_pragma=busy_timeout(" + strconv.FormatInt(BusyTimeout.Milliseconds(), 10) + ")" +
		"&_pragma=synchronous(" + syncLevel + ")&_txlock=immediate"
	if !create {
		q += "&mode=rw"
	}
	return rawsqlite.FileURI(abs, q)
}

// sqliteCode returns the primary SQLite result code of err, or 0.
func sqliteCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() & 0xff
	}
	return 0
}

// Path returns the absolute path of the database file.
func (s *Store) Path() string { return s.path }

// Close runs what Share's borrowers asked for (the audit queue writes its
// rows) and closes the store's connections.
func (s *Store) Close() error {
	s.stopCatchUp()
	s.closeFirst.Lock()
	fns := s.closeFirst.fns
	s.closeFirst.fns = nil
	s.closeFirst.Unlock()
	for _, fn := range fns {
		fn()
	}
	for _, st := range []*sql.Stmt{s.headStmt, s.insertEvent, s.indexEvents, s.indexCheckpoints, s.recallSource, s.recallInsert, s.vectorInsert} {
		if st != nil {
			st.Close()
		}
	}
	s.verifiers.Lock()
	if s.verifiers.idle != nil {
		s.verifiers.idle.close()
		s.verifiers.idle = nil
	}
	s.verifiers.closed = true
	s.verifiers.Unlock()
	return s.db.Close()
}

// head returns the id and hash of the newest event, or 0 and GenesisHash.
func (s *Store) head(ctx context.Context, tx *sql.Tx) (int64, string, error) {
	var id int64
	var hash string
	err := tx.StmtContext(ctx, s.headStmt).QueryRowContext(ctx).Scan(&id, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, GenesisHash, nil
	}
	return id, hash, err
}

// Append adds one event to the chain: kind and content are stripped
// (Strip), empty content is ErrEmptyContent, empty kind becomes "note". The
// head is read and the row inserted in one BEGIN IMMEDIATE transaction, so
// concurrent appenders in other processes keep one unbroken chain.
func (s *Store) Append(ctx context.Context, session, kind, content string) (_ Event, err error) {
	defer func() { err = markBusy(err) }()
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Event{}, fmt.Errorf("memory: append: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	e, indexed, err := s.appendTx(ctx, tx, session, kind, content, &s.indexedEvents)
	if err != nil {
		return Event{}, err
	}
	if err := tx.Commit(); err != nil {
		return Event{}, fmt.Errorf("memory: append: commit: %w", err)
	}
	if indexed {
		s.indexedEvents, s.recalledEvents = e.ID, e.ID
	} else if s.fts {
		s.catchUpInBackground(e.ID - min(s.indexedEvents, s.recalledEvents))
	}
	return e, nil
}

// AppendTx is Append inside tx, a write transaction the caller began on a
// connection of this store (see [Store.Conn]) and commits itself, so that
// the event is written together with the caller's other changes, or not at
// all (restore records itself this way).
// The event's index entry is written in tx too.
func (s *Store) AppendTx(ctx context.Context, tx *sql.Tx, session, kind, content string) (Event, error) {
	e, _, err := s.appendTx(ctx, tx, session, kind, content, nil)
	return e, err
}

// appendTx is AppendTx; cache, when not nil, is the last event id this
// store indexed (read under writeMu). indexed reports whether the index
// now holds the event (false without an index, or when a long backlog is
// left to the catch-up).
func (s *Store) appendTx(ctx context.Context, tx *sql.Tx, session, kind, content string, cache *int64) (_ Event, indexed bool, err error) {
	content = Strip(content)
	if content == "" {
		return Event{}, false, ErrEmptyContent
	}
	kind = Strip(kind)
	if kind == "" {
		kind = "note"
	}
	prevID, prevHash, err := s.head(ctx, tx)
	if err != nil {
		return Event{}, false, fmt.Errorf("memory: append: read head: %w", err)
	}
	e := Event{
		ID:       prevID + 1,
		TS:       s.now().UTC().Format(TimeLayout),
		Session:  session,
		Kind:     kind,
		Content:  content,
		PrevHash: prevHash,
	}
	e.Hash = Hash(e.ID, e.TS, e.Session, e.Kind, e.Content, e.PrevHash)
	res, err := tx.StmtContext(ctx, s.insertEvent).ExecContext(ctx,
		e.ID, e.TS, e.Session, e.Kind, e.Content, e.PrevHash, e.Hash)
	if err != nil {
		return Event{}, false, fmt.Errorf("memory: append: %w", err)
	}
	if err := checkStored(ctx, tx, res, `SELECT count(*), coalesce(max(id = ? AND hash = ? AND content = ? AND kind = ?), 0) FROM memory_events WHERE id >= ?`,
		e.ID, e.Hash, e.Content, e.Kind, e.ID); err != nil {
		return Event{}, false, fmt.Errorf("memory: append: event %d: %w", e.ID, err)
	}
	if s.fts {
		// Whether others appended since this store's last append is
		// known only under writeMu (Append); otherwise the index is asked.
		last, recalled := int64(-1), int64(-1)
		if cache != nil {
			last, recalled = *cache, s.recalledEvents
		}
		if indexed, err = indexUpTo(ctx, tx, s.indexEvents, eventsIndex, last, e.ID); err != nil {
			return Event{}, false, fmt.Errorf("memory: append: index: %w", err)
		}
		both := s.noRecall
		if !both {
			both, err = s.recallUpTo(ctx, tx, recallEvents, recalled, e.ID)
		}
		if err != nil {
			return Event{}, false, fmt.Errorf("memory: append: recall index: %w", err)
		}
		indexed = indexed && both
	}
	if err := s.vectorsUpTo(ctx, tx, false, e.ID, e.Content); err != nil {
		return Event{}, false, fmt.Errorf("memory: append: vector: %w", err)
	}
	return e, indexed, nil
}

// Begin starts a write transaction (BEGIN IMMEDIATE) on the store's pool,
// for [Store.AppendTx] (and audit.WriteTx) beside the caller's own
// statements.
func (s *Store) Begin(ctx context.Context) (*sql.Tx, error) { return s.db.BeginTx(ctx, nil) }

// Conn pins one connection of the store's pool for a caller that runs
// statements of its own around a write transaction on it (restore attaches
// its snapshot before it begins). The caller closes it; a transaction begun
// on it is BEGIN IMMEDIATE, as every write of the store.
func (s *Store) Conn(ctx context.Context) (*sql.Conn, error) { return s.db.Conn(ctx) }

// Checkpoint stores a summary (stripped; empty is ErrEmptySummary) anchored
// to the current chain head.
func (s *Store) Checkpoint(ctx context.Context, session, summary string) (_ Checkpoint, err error) {
	defer func() { err = markBusy(err) }()
	summary = Strip(summary)
	if summary == "" {
		return Checkpoint{}, ErrEmptySummary
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("memory: checkpoint: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	headID, headHash, err := s.head(ctx, tx)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("memory: checkpoint: read head: %w", err)
	}
	c := Checkpoint{
		TS:          s.now().UTC().Format(TimeLayout),
		Session:     session,
		Summary:     summary,
		LastEventID: headID,
		HeadHash:    headHash,
	}
	res, err := tx.ExecContext(ctx,
		`INSERT INTO memory_checkpoints (ts, session, summary, last_event_id, head_hash) VALUES (?, ?, ?, ?, ?)`,
		c.TS, c.Session, c.Summary, c.LastEventID, c.HeadHash)
	if err == nil {
		c.ID, err = res.LastInsertId()
	}
	if err != nil {
		return Checkpoint{}, fmt.Errorf("memory: checkpoint: %w", err)
	}
	if err := checkStored(ctx, tx, res, `SELECT count(*), coalesce(max(id = ? AND summary = ? AND last_event_id = ? AND head_hash = ?), 0) FROM memory_checkpoints WHERE id >= ?`,
		c.ID, c.Summary, c.LastEventID, c.HeadHash, c.ID); err != nil {
		return Checkpoint{}, fmt.Errorf("memory: checkpoint %d: %w", c.ID, err)
	}
	indexed := false
	if s.fts {
		if indexed, err = indexUpTo(ctx, tx, s.indexCheckpoints, checkpointsIndex, s.indexedCheckpoints, c.ID); err != nil {
			return Checkpoint{}, fmt.Errorf("memory: checkpoint: index: %w", err)
		}
		both := false
		if both, err = s.recallUpTo(ctx, tx, recallCheckpoints, s.recalledCheckpoints, c.ID); err != nil {
			return Checkpoint{}, fmt.Errorf("memory: checkpoint: recall index: %w", err)
		}
		indexed = indexed && both
	}
	if err := s.vectorsUpTo(ctx, tx, true, c.ID, c.Summary); err != nil {
		return Checkpoint{}, fmt.Errorf("memory: checkpoint: vector: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return Checkpoint{}, fmt.Errorf("memory: checkpoint: commit: %w", err)
	}
	if indexed {
		s.indexedCheckpoints, s.recalledCheckpoints = c.ID, c.ID
	} else if s.fts {
		s.catchUpInBackground(c.ID - min(s.indexedCheckpoints, s.recalledCheckpoints))
	}
	return c, nil
}

// checkStored checks, inside the transaction that inserted it, that an
// INSERT stored exactly its row (SPEC 5.6, the server tables defend
// themselves): res says one row changed, and probe, which counts the rows
// from the new id on and whether the one there has the values written,
// finds exactly that row. A BEFORE INSERT trigger with RAISE(IGNORE)
// leaves no row (changes() = 0); a trigger that rewrote or added rows
// leaves others. Either is ErrNotStored and the caller rolls back.
func checkStored(ctx context.Context, tx *sql.Tx, res sql.Result, probe string, args ...any) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	var rows int64
	var same bool
	if err := tx.QueryRowContext(ctx, probe, args...).Scan(&rows, &same); err != nil {
		return err
	}
	if n != 1 || rows != 1 || !same {
		return fmt.Errorf("%w (the INSERT changed %d rows and %d rows are at or after its id, matching=%v): "+
			"a trigger another program added to the table rewrites or drops appends; see the server log at start, "+
			"or list them with: sqlite3 FILE \"SELECT name, sql FROM sqlite_master WHERE type = 'trigger'\"", ErrNotStored, n, rows, same)
	}
	return nil
}

// LatestCheckpoint returns the newest checkpoint, or ok false when there is
// none.
func (s *Store) LatestCheckpoint(ctx context.Context) (c Checkpoint, ok bool, err error) {
	return latestCheckpoint(ctx, s.db)
}

type queryRower interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func latestCheckpoint(ctx context.Context, q queryRower) (Checkpoint, bool, error) {
	var c Checkpoint
	err := q.QueryRowContext(ctx,
		`SELECT id, ts, session, summary, last_event_id, head_hash FROM memory_checkpoints ORDER BY id DESC LIMIT 1`).
		Scan(&c.ID, &c.TS, &c.Session, &c.Summary, &c.LastEventID, &c.HeadHash)
	if errors.Is(err, sql.ErrNoRows) {
		return Checkpoint{}, false, nil
	}
	if err != nil {
		return Checkpoint{}, false, fmt.Errorf("memory: latest checkpoint: %w", err)
	}
	return c, true, nil
}

// AgentOf is the agent named by a session value "<start>-<hex>@<agent>"
// (what the server writes for a call over HTTP), or "" for any other
// session (stdio runs, the reference server, hooks).
func AgentOf(session string) string {
	i := strings.LastIndexByte(session, '@')
	if i < 0 || i == len(session)-1 {
		return ""
	}
	for _, r := range session[i+1:] {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return ""
		}
	}
	return session[i+1:]
}
