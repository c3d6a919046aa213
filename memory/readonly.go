package memory

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/hashicorp/go-hclog"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

// ReadOnlyDSN is the data source name of a connection that can only read
// the file at abs: opened read-only (mode=ro: it never checkpoints the WAL
// into the file, also as the last connection) and PRAGMA query_only, with
// the memory's busy timeout and trusted_schema off (a read never runs a
// function the schema names). The person's view (package ui) reads
// through it.
func ReadOnlyDSN(abs string) string {
	return rawsqlite.FileURI(abs, "mode=ro&_pragma=busy_timeout("+strconv.FormatInt(BusyTimeout.Milliseconds(), 10)+")"+
		"&_pragma=query_only(1)&_pragma=trusted_schema(0)")
}

// OpenReadOnly opens an existing memory database as OpenExisting does, but
// through ReadOnlyDSN connections only: Verify and Export work, Append,
// Checkpoint and Audit fail. Nothing it does changes the file's bytes.
func OpenReadOnly(ctx context.Context, path string, log hclog.Logger) (*Store, error) {
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
	db, err := sql.Open("sqlite", ReadOnlyDSN(abs))
	if err != nil {
		return nil, fmt.Errorf("memory: open %s: %w", abs, err)
	}
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(4)
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
