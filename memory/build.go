package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/hashicorp/go-hclog"
)

// ErrTargetNotEmpty: a Build's target already holds memory rows.
var ErrTargetNotEmpty = errors.New("the target database already holds memory events or checkpoints; import builds a new memory, into a new file or one without them")

// Build writes a memory from rows read elsewhere (package portable's
// import): every row as given, with its own id, ts, session and hash, in
// one transaction with the server schema and the full-text index, so that
// a build that is not committed leaves the file as it was. It judges
// nothing: the caller checks the chain (ChainCheck) before adding a row.
type Build struct {
	db                        *sql.DB
	tx                        *sql.Tx
	fts                       bool
	insEvent, insCheckpoint   *sql.Stmt
	lastEvent, lastCheckpoint int64
}

// BeginBuild opens the database at path, which must exist (fresh marks an
// empty file the caller just made, switched to WAL as Open makes a file),
// refuses one with other columns in the server tables or, unless fresh,
// with objects another program added (a trigger would run inside the
// inserts), and begins the transaction: the server schema and the index,
// then a check that no memory row is there (ErrTargetNotEmpty).
func BeginBuild(ctx context.Context, path string, fresh bool, log hclog.Logger) (_ *Build, err error) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	db, _, err := openDB(ctx, path, fresh, synchronousFull, log)
	if err != nil {
		return nil, err
	}
	b := &Build{db: db}
	defer func() {
		if err != nil {
			b.Close()
		}
	}()
	if err := checkColumns(ctx, db, TableEvents, TableCheckpoints, TableQueryLog); err != nil {
		return nil, fmt.Errorf("memory: %s: %w", path, err)
	}
	if !fresh {
		if err := checkForeign(path); err != nil {
			return nil, err
		}
	}
	if b.tx, err = db.BeginTx(ctx, nil); err != nil {
		return nil, fmt.Errorf("memory: import: %w", err)
	}
	for _, stmt := range slices.Concat(eventsDDL, auditDDL) {
		if _, err := b.tx.ExecContext(ctx, stmt); err != nil {
			return nil, fmt.Errorf("memory: import: schema: %w", err)
		}
	}
	b.fts = true
	for _, stmt := range indexDDL {
		if _, err := b.tx.ExecContext(ctx, stmt); err != nil {
			// As Open: without an index the chain works; the server
			// tries again at start.
			log.Warn("could not create the full-text index of the memory; the server builds it at start", "error", err)
			b.fts = false
			break
		}
	}
	var held int64
	if err := b.tx.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM memory_events) + (SELECT count(*) FROM memory_checkpoints)`).Scan(&held); err != nil {
		return nil, fmt.Errorf("memory: import: %w", err)
	}
	if held > 0 {
		return nil, ErrTargetNotEmpty
	}
	// A page cache that holds the hash index (about 100 MB for 1M events):
	// random inserts into it thrash the default 2 MB one on a long chain.
	// It is a ceiling, filled only as far as the import needs.
	if _, err := b.tx.ExecContext(ctx, `PRAGMA cache_size = -262144`); err != nil {
		return nil, fmt.Errorf("memory: import: %w", err)
	}
	if b.insEvent, err = b.tx.PrepareContext(ctx, `INSERT INTO memory_events (id, ts, session, kind, content, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?)`); err != nil {
		return nil, fmt.Errorf("memory: import: %w", err)
	}
	if b.insCheckpoint, err = b.tx.PrepareContext(ctx, `INSERT INTO memory_checkpoints (id, ts, session, summary, last_event_id, head_hash) VALUES (?, ?, ?, ?, ?, ?)`); err != nil {
		return nil, fmt.Errorf("memory: import: %w", err)
	}
	return b, nil
}

// AddEvent inserts e as it is.
func (b *Build) AddEvent(ctx context.Context, e Event) error {
	if _, err := b.insEvent.ExecContext(ctx, e.ID, e.TS, e.Session, e.Kind, e.Content, e.PrevHash, e.Hash); err != nil {
		return err
	}
	b.lastEvent = max(b.lastEvent, e.ID)
	return nil
}

// AddCheckpoint inserts c as it is.
func (b *Build) AddCheckpoint(ctx context.Context, c Checkpoint) error {
	if _, err := b.insCheckpoint.ExecContext(ctx, c.ID, c.TS, c.Session, c.Summary, c.LastEventID, c.HeadHash); err != nil {
		return err
	}
	b.lastCheckpoint = max(b.lastCheckpoint, c.ID)
	return nil
}

// Commit indexes the rows added and commits.
func (b *Build) Commit(ctx context.Context) error {
	if b.fts {
		// The recall index too: a cluster node's store (OpenNode) trusts
		// the indexes to be complete and never catches them up, and an
		// import is how a cluster gets its memory (import --rqlite).
		for _, idx := range []struct {
			spec indexSpec
			last int64
		}{{eventsIndex, b.lastEvent}, {checkpointsIndex, b.lastCheckpoint}, {recallEvents, b.lastEvent}, {recallCheckpoints, b.lastCheckpoint}} {
			if err := indexThrough(ctx, b.tx, idx.spec, 0, idx.last); err != nil {
				return fmt.Errorf("memory: import: index: %w", err)
			}
		}
	}
	if err := b.tx.Commit(); err != nil {
		return fmt.Errorf("memory: import: commit: %w", err)
	}
	return nil
}

// Close rolls back what was not committed and closes the database.
func (b *Build) Close() error {
	for _, st := range []*sql.Stmt{b.insEvent, b.insCheckpoint} {
		if st != nil {
			st.Close()
		}
	}
	if b.tx != nil {
		_ = b.tx.Rollback()
	}
	return b.db.Close()
}
