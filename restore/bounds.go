package restore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/memory"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/snapshot"
)

// snapObjects are the agent's objects of a snapshot that a restore
// creates from their SQL: not the shadow tables of virtual tables (their
// virtual table makes them) nor SQLite's automatic indexes.
func snapObjects(c *catalog) []snapshot.Object {
	var out []snapshot.Object
	for _, o := range c.agent("") {
		if o.list == "shadow" || o.sql == "" {
			continue
		}
		out = append(out, snapshot.Object{Type: o.typ, Name: o.name, Table: o.tbl, SQL: o.sql})
	}
	return out
}

// capGrowth bounds how much the restore may add to the database
// (max_page_count on conn): o.MaxGrowth beyond four times the snapshot's
// size. It returns what lifts the cap.
func capGrowth(ctx context.Context, conn *sql.Conn, o Options) (func(), error) {
	if o.MaxGrowth <= 0 {
		return func() {}, nil
	}
	growth := o.MaxGrowth
	if fi, err := os.Stat(o.Snapshot); err == nil {
		growth += 4 * fi.Size()
	}
	var pages, size, old int64
	for _, p := range []struct {
		pragma string
		v      *int64
	}{{"page_count", &pages}, {"page_size", &size}, {"max_page_count", &old}} {
		if err := conn.QueryRowContext(ctx, "PRAGMA main."+p.pragma).Scan(p.v); err != nil {
			return nil, err
		}
	}
	if size <= 0 {
		return func() {}, nil
	}
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA main.max_page_count = %d", pages+growth/size+1)); err != nil {
		return nil, err
	}
	return func() {
		_, _ = conn.ExecContext(context.Background(), fmt.Sprintf("PRAGMA main.max_page_count = %d", old))
	}, nil
}

// budgetErr words a restore stopped by its time or growth bound.
func budgetErr(ctx context.Context, o Options, err error) error {
	if err == nil {
		return nil
	}
	var h *snapshot.HostileError
	if errors.As(err, &h) {
		return err
	}
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded):
		return &snapshot.BudgetError{Msg: fmt.Sprintf("the restore ran over its time budget of %s and was rolled back; your database was not changed. The snapshot may hold an endless or huge query; if it is a large honest one, raise the budget (--restore-timeout)", o.Timeout)}
	case sqliteCode(err) == rawsqlite.ResultFull && o.MaxGrowth > 0:
		return &snapshot.BudgetError{Msg: fmt.Sprintf("the restore would grow the database by more than %d MiB beyond four times the snapshot's size and was rolled back; your database was not changed. If the snapshot is an honest one, raise --max-growth-mb", o.MaxGrowth>>20)}
	}
	return err
}

// checkServerObjects refuses a snapshot whose triggers and views on the
// server's tables are not exactly those the server creates (a trigger
// that drops appends, a body that rewrites the memory): the server's own
// are read from a new memory database made here.
func checkServerObjects(ctx context.Context, snap *catalog) error {
	dir, err := os.MkdirTemp("", "mcp-sqlite-memory-restore-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	store, err := memory.Open(ctx, filepath.Join(dir, "fresh.db"), hclog.NewNullLogger())
	if err != nil {
		return err
	}
	own := map[string]string{}
	err = func() error {
		defer store.Close()
		fresh, err := readFresh(ctx, store)
		if err != nil {
			return err
		}
		for _, o := range fresh {
			own[o.typ+"\x00"+rawsqlite.FoldName(o.name)] = o.sql
		}
		return nil
	}()
	if err != nil {
		return err
	}
	for _, o := range snap.objs {
		if !o.server || (o.typ != "trigger" && o.typ != "view") {
			continue
		}
		if sql, ok := own[o.typ+"\x00"+rawsqlite.FoldName(o.name)]; !ok || sql != o.sql {
			return &snapshot.HostileError{Source: "snapshot", What: fmt.Sprintf("%s %s on %s is not one the server creates: %s", o.typ, snapshot.Printable(o.name), snapshot.Printable(o.tbl), snapshot.Printable(oneLine(o.sql)))}
		}
	}
	return nil
}

// readFresh reads the objects of a new memory database.
func readFresh(ctx context.Context, store *memory.Store) ([]object, error) {
	conn, err := store.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	c, err := readCatalog(ctx, conn, "main")
	if err != nil {
		return nil, err
	}
	return c.objs, nil
}

// snapshotFault is an error reading the attached snapshot: a corrupt
// snapshot is the snapshot's fault, not the database's.
func snapshotFault(err error) error {
	if sqliteCode(err) == rawsqlite.ResultCorrupt {
		return &snapshot.HostileError{Source: "snapshot", What: "SQLite finds it corrupt"}
	}
	return err
}
