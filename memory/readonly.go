package memory

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"

	"github.com/hashicorp/go-hclog"

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
// through ReadOnlyDSN connections only: Verify and export (package
// portable) work, Append, Checkpoint and the audit queue fail. Nothing it does
// changes the file's bytes.
func OpenReadOnly(ctx context.Context, path string, log hclog.Logger) (*Store, error) {
	return openExisting(ctx, path, log, func(abs string) (*sql.DB, error) {
		db, err := sql.Open("sqlite", ReadOnlyDSN(abs))
		if err != nil {
			return nil, fmt.Errorf("memory: open %s: %w", abs, err)
		}
		db.SetMaxOpenConns(4)
		db.SetMaxIdleConns(4)
		return db, nil
	})
}
