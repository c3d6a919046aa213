package memory

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/policy"
)

// Cluster mode (SPEC 13, docs/cluster.md): the database lives in rqlite,
// and the front cannot hold a SQLite write transaction. What a local
// Store does inside BEGIN IMMEDIATE (read the head, insert, index) becomes
// a plan: a list of statements that rqlite runs as one transaction on
// every node. The head is read before (ReadHead, on the node's file or a
// strong query), the hash computed here in Go (SPEC 5.1 unchanged), and
// the guards below fail the whole request, on every node alike, when what
// the plan was made against no longer holds.
//
// Every value in a plan is an argument or a deterministic expression over
// rows (max(id), changes(), last_insert_rowid()): every node runs the same
// text and must reach the same bytes. Nothing here talks to rqlite.

// Stmt is one statement of a plan with its arguments (positional, as "?").
// The cluster client sends it as rqlite's ["SQL", arg, ...] form, so every
// argument is a value JSON carries as it is: nil, int64 or string (a
// vector goes as hex, decoded by unhex() in the statement: rqlite would
// store a JSON []byte, base64, as TEXT).
type Stmt struct {
	SQL  string
	Args []any
}

// Head is the newest event of the chain: ID 0 and GenesisHash when empty.
type Head struct {
	ID   int64
	Hash string
}

// The cluster's own objects (policy names them, so agents can read but
// never write them, list_tables hides the guard table, and the start
// check counts them as the server's).
const (
	TableClusterGuard = policy.TableClusterGuard
	IndexChainGuard   = policy.IndexChainGuard
)

// clusterDDL are the objects only a cluster has:
//   - the chain guard, a UNIQUE index on memory_events(prev_hash): two
//     fronts that read the same head compute events with the same
//     prev_hash, and only the first INSERT stands (the genesis prev_hash
//     is used once too). On the same head the id's PRIMARY KEY fails
//     first (SQLite checks it before the indexes); the index refuses what
//     the key cannot: an event on a taken prev_hash under another id.
//   - the guard table: one row per guard, k (guardSchema, guardRows,
//     guardStored) and ok, whose CHECK fails the statement, and with
//     rqlite's ?transaction the whole request, when the guard's condition
//     is false.
var clusterDDL = []string{
	`CREATE UNIQUE INDEX IF NOT EXISTS ` + IndexChainGuard + ` ON ` + TableEvents + `(prev_hash)`,
	`CREATE TABLE IF NOT EXISTS ` + TableClusterGuard + ` (k INTEGER PRIMARY KEY, ok INTEGER NOT NULL CHECK (ok = 1))`,
}

// The guard table's keys.
const (
	guardSchema = 1 // SchemaGuard
	guardRows   = 2 // UpdateRowsGuard
	guardStored = 3 // the plans' stored-row check (checkStored's)
)

// ClusterSchema is everything a new cluster needs, each statement IF NOT
// EXISTS so that any front may run it at every start (an existing object
// is a no-op that changes neither sqlite_master nor the schema version):
// the chain, checkpoint and audit schema byte for byte as a local file
// has it (SPEC 5), the full-text and recall indexes exactly as Open
// creates them, and the cluster's guards. memory_vectors is not in it: a
// local store creates it only with an embedding model (UseEmbeddings);
// a front with one runs ClusterVectorSchema too.
func ClusterSchema() []Stmt {
	var out []Stmt
	for _, s := range slices.Concat(eventsDDL, auditDDL, indexDDL, clusterDDL) {
		out = append(out, Stmt{SQL: s})
	}
	return out
}

// ClusterVectorSchema creates memory_vectors, as UseEmbeddings does, for a
// front that runs with an embedding model. Vectors of another model are
// not deleted here: in a cluster every front must use the same model.
func ClusterVectorSchema() []Stmt { return []Stmt{{SQL: vectorsDDL}} }

// SchemaGuard fails the request when the database's schema version is no
// longer version, the one a statement was judged against: put it before
// the statement in the same request. A false comparison stores 0, which
// the guard table's CHECK refuses.
func SchemaGuard(version int64) Stmt {
	return Stmt{
		SQL:  fmt.Sprintf(`INSERT OR REPLACE INTO %s(k, ok) VALUES (%d, (SELECT schema_version FROM pragma_schema_version) = ?)`, TableClusterGuard, guardSchema),
		Args: []any{version},
	}
}

// UpdateRowsGuard fails the request when the statement just before it
// changed more than max rows (--max-update-rows): changes() is the count
// of the last completed INSERT, UPDATE or DELETE, the same on every node.
func UpdateRowsGuard(max int64) Stmt {
	return Stmt{
		SQL:  fmt.Sprintf(`INSERT OR REPLACE INTO %s(k, ok) VALUES (%d, changes() <= ?)`, TableClusterGuard, guardRows),
		Args: []any{max},
	}
}

// ReadHead returns the newest event's id and hash, or 0 and GenesisHash,
// over q (a *sql.DB, *sql.Conn or *sql.Tx on the node's file).
func ReadHead(ctx context.Context, q queryRower) (Head, error) {
	h := Head{}
	err := q.QueryRowContext(ctx, `SELECT id, hash FROM `+TableEvents+` ORDER BY id DESC LIMIT 1`).Scan(&h.ID, &h.Hash)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Head{Hash: GenesisHash}, nil
	case err != nil:
		return Head{}, fmt.Errorf("memory: read head: %w", markBusy(err))
	}
	return h, nil
}

// FindEvent returns the event whose hash is hash, if any: after an append
// whose outcome is unknown (a timeout, a lost connection, a new leader),
// the front looks for its own event before it plans again, so nothing is
// appended twice. A hash names one event: it covers id, ts, session,
// kind, content and prev_hash, and the column is UNIQUE.
func FindEvent(ctx context.Context, q queryRower, hash string) (Event, bool, error) {
	var e Event
	err := q.QueryRowContext(ctx, `SELECT id, ts, session, kind, content, prev_hash, hash FROM `+TableEvents+` WHERE hash = ?`, hash).
		Scan(&e.ID, &e.TS, &e.Session, &e.Kind, &e.Content, &e.PrevHash, &e.Hash)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Event{}, false, nil
	case err != nil:
		return Event{}, false, fmt.Errorf("memory: find event: %w", markBusy(err))
	}
	return e, true, nil
}

// PlanAppend is Append as a plan on head: kind and content stripped as
// Append strips them (ErrEmptyContent; an empty kind is "note"), the
// event id head.ID+1 and its hash computed here, at ts. The statements
// insert the event, check that exactly it was stored (a trigger another
// program added cannot drop or rewrite it unnoticed), and write its rows
// in memory_events_fts and memory_recall (and memory_vectors with emb,
// which may be nil), the rows a local Append writes. On a head that
// moved the INSERT fails on the PRIMARY KEY or the chain guard, and so
// does the whole request; the caller reads the head again and plans
// again with the same ts, session, kind and content.
func PlanAppend(head Head, ts time.Time, session, kind, content string, emb Embedder) (Event, []Stmt, error) {
	content = Strip(content)
	if content == "" {
		return Event{}, nil, ErrEmptyContent
	}
	kind = Strip(kind)
	if kind == "" {
		kind = "note"
	}
	e := Event{
		ID:       head.ID + 1,
		TS:       ts.UTC().Format(TimeLayout),
		Session:  session,
		Kind:     kind,
		Content:  content,
		PrevHash: head.Hash,
	}
	e.Hash = Hash(e.ID, e.TS, e.Session, e.Kind, e.Content, e.PrevHash)
	plan := []Stmt{
		{SQL: `INSERT INTO ` + TableEvents + ` (id, ts, session, kind, content, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			Args: []any{e.ID, e.TS, e.Session, e.Kind, e.Content, e.PrevHash, e.Hash}},
		storedGuard(`SELECT count(*) = 1 AND coalesce(max(id = ? AND hash = ? AND content = ? AND kind = ?), 0) FROM `+TableEvents+` WHERE id >= ?`,
			e.ID, e.Hash, e.Content, e.Kind, e.ID),
		// The local store indexes from the index's last row; a plan
		// indexes exactly its own event (every plan indexes its own).
		{SQL: indexSQL(eventsIndex), Args: []any{e.ID - 1, e.ID}},
		{SQL: recallInsertSQL, Args: []any{e.ID, recallText(e.Content), e.Kind, recallPairs(e.Content)}},
	}
	if emb != nil {
		plan = append(plan, Stmt{SQL: `INSERT OR REPLACE INTO ` + TableVectors + ` (id, model, vector) VALUES (?, ?, unhex(?))`,
			Args: []any{e.ID, emb.ID(), hex.EncodeToString(encodeVector(emb.Embed(recallText(e.Content))))}})
	}
	return e, plan, nil
}

// newestCheckpoint is the id the checkpoint a plan inserted got: SQLite
// gives a new row max(id)+1, and the stored-row guard has checked that
// the row at that id is exactly the plan's. (last_insert_rowid() would
// change with the index INSERTs that follow.)
const newestCheckpoint = `(SELECT max(id) FROM ` + TableCheckpoints + `)`

// PlanCheckpoint is Checkpoint as a plan on head: the summary stripped
// (ErrEmptySummary), anchored to head, at ts. SQLite assigns the id, so
// the returned Checkpoint's ID is 0: the caller takes it from the first
// statement's last insert id (rqlite's last_insert_id). The statements
// insert the row, check that exactly it was stored, and write its rows in
// memory_checkpoints_fts and memory_recall (and memory_vectors with emb)
// under the id it got. Checkpoints have no chain guard: a head that moved
// meanwhile leaves a checkpoint anchored to an older event, as a local
// checkpoint written just before an append is.
func PlanCheckpoint(head Head, ts time.Time, session, summary string, emb Embedder) (Checkpoint, []Stmt, error) {
	summary = Strip(summary)
	if summary == "" {
		return Checkpoint{}, nil, ErrEmptySummary
	}
	c := Checkpoint{
		TS:          ts.UTC().Format(TimeLayout),
		Session:     session,
		Summary:     summary,
		LastEventID: head.ID,
		HeadHash:    head.Hash,
	}
	plan := []Stmt{
		{SQL: `INSERT INTO ` + TableCheckpoints + ` (ts, session, summary, last_event_id, head_hash) VALUES (?, ?, ?, ?, ?)`,
			Args: []any{c.TS, c.Session, c.Summary, c.LastEventID, c.HeadHash}},
		// Right after the INSERT, last_insert_rowid() is the new row's id.
		storedGuard(`SELECT count(*) = 1 AND coalesce(max(id = last_insert_rowid() AND summary = ? AND last_event_id = ? AND head_hash = ?), 0) FROM `+TableCheckpoints+` WHERE id >= last_insert_rowid()`,
			c.Summary, c.LastEventID, c.HeadHash),
		{SQL: `INSERT INTO ` + checkpointsIndex.fts + `(rowid, ` + checkpointsIndex.columns + `) SELECT id, ` + checkpointsIndex.columns +
			` FROM ` + TableCheckpoints + ` WHERE id = ` + newestCheckpoint},
		// A checkpoint's recall row is under minus its id (recallThrough).
		{SQL: `INSERT INTO ` + IndexRecall + `(rowid, body, kind, pairs) SELECT -` + newestCheckpoint + `, ?, 'checkpoint', ?`,
			Args: []any{recallText(c.Summary), recallPairs(c.Summary)}},
	}
	if emb != nil {
		plan = append(plan, Stmt{SQL: `INSERT OR REPLACE INTO ` + TableVectors + ` (id, model, vector) SELECT -` + newestCheckpoint + `, ?, unhex(?)`,
			Args: []any{emb.ID(), hex.EncodeToString(encodeVector(emb.Embed(recallText(c.Summary))))}})
	}
	return c, plan, nil
}

// storedGuard is checkStored as a statement, placed right after the
// INSERT: the INSERT changed one row (changes()), and probe, whose one
// value is true when exactly the plan's row is at or after its id, holds.
func storedGuard(probe string, args ...any) Stmt {
	return Stmt{
		SQL:  fmt.Sprintf(`INSERT OR REPLACE INTO %s(k, ok) VALUES (%d, changes() = 1 AND (%s))`, TableClusterGuard, guardStored, probe),
		Args: args,
	}
}

// ChainConflict reports whether msg, a statement error as rqlite or SQLite
// reports it, says an append lost the race for the head: its id or its
// prev_hash was taken by another front's event. The caller reads the head
// again (after FindEvent, when the outcome of its own earlier try is
// unknown) and plans again.
func ChainConflict(msg string) bool {
	return strings.Contains(msg, "UNIQUE constraint failed: "+TableEvents+".prev_hash") ||
		strings.Contains(msg, "UNIQUE constraint failed: "+TableEvents+".id")
}

// GuardFailed reports whether msg says a guard of the guard table failed
// (SchemaGuard, UpdateRowsGuard or a plan's stored-row check): the CHECK
// constraint of memory_cluster_guard.
func GuardFailed(msg string) bool {
	return strings.Contains(msg, "CHECK constraint failed") && strings.Contains(msg, "ok = 1")
}

// OpenNode opens the SQLite file of the rqlite node beside this front
// (DATADIR/db.sqlite) as OpenReadOnly does, so that ResumeContext, Recall
// and Verify read it where it is: the file is rqlite's, and nothing here
// writes it. Unlike OpenReadOnly it uses the full-text and recall indexes
// when the file has them (ClusterSchema made them): plans write every
// row's index entries with the row, so the indexes are complete, and the
// catch-up a local store runs has nothing to do. With emb (may be nil)
// recall fuses with the vectors the plans wrote, as UseEmbeddings makes a
// local store do, without creating or deleting anything.
func OpenNode(ctx context.Context, path string, emb Embedder, fusion Fusion, log hclog.Logger) (*Store, error) {
	s, err := OpenReadOnly(ctx, path, log)
	if err != nil {
		return nil, err
	}
	var indexes, vectors int
	err = s.db.QueryRowContext(ctx, `SELECT count(name IN (?, ?, ?) OR NULL), count(name = ? OR NULL) FROM sqlite_master WHERE type = 'table'`,
		IndexEvents, IndexCheckpoints, IndexRecall, TableVectors).Scan(&indexes, &vectors)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("memory: %s: %w", s.path, markBusy(err))
	}
	s.fts = indexes == 3
	// No background catch-up: it could only fail on this file, again at
	// every recall.
	s.bg.closed = true
	if emb != nil && vectors == 1 {
		s.emb, s.fusion = emb, fusion
	}
	return s, nil
}
