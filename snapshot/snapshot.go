package snapshot

import (
	"errors"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

// serverStubs stand in for the server's objects in the scratch database
// CheckSnapshot builds, so that a snapshot's object naming one compiles
// and is refused by name rather than for a missing table.
const serverStubs = `CREATE TABLE memory_events(id INTEGER PRIMARY KEY, ts TEXT, session TEXT, kind TEXT, content TEXT, prev_hash TEXT, hash TEXT);
CREATE TABLE memory_checkpoints(id INTEGER PRIMARY KEY, ts TEXT, session TEXT, summary TEXT, last_event_id INTEGER, head_hash TEXT);
CREATE TABLE query_log(id INTEGER PRIMARY KEY, ts TEXT, session TEXT, tool TEXT, query TEXT, ok INTEGER, rows INTEGER, error TEXT, duration_ms INTEGER, detail TEXT);
CREATE TABLE query_errors(id, ts, tool, query, error);
CREATE VIRTUAL TABLE memory_events_fts USING fts5(content, kind, content='memory_events', content_rowid='id');
CREATE VIRTUAL TABLE memory_checkpoints_fts USING fts5(summary, content='memory_checkpoints', content_rowid='id');`

// CheckSnapshot checks the agent's objects of a full snapshot, in the
// order a restore creates them (tables, then indexes, views and
// triggers), with the same rules as an undo record's: each is created
// from its stored SQL, one statement of its declared type and name, in a
// scratch database in memory that holds only them and stand-ins for the
// server's objects, under the guard (virtual tables of the fts5 and rtree
// modules allowed); then every view and trigger body is compiled under the
// guard and no foreign key may refer to a server object. Shadow tables of
// virtual tables are left out (their virtual table creates them). It
// returns *HostileError (Source "snapshot") for a snapshot that breaks a
// rule; nothing of the snapshot runs on the database.
func CheckSnapshot(objs []Object) error {
	c, err := rawsqlite.Open(":memory:", rawsqlite.ReadWrite|rawsqlite.Create)
	if err != nil {
		return err
	}
	defer c.Close()
	// trusted_schema stays on: nothing of the snapshot runs here but its
	// CREATE statements, and a view using FTS5's functions must compile.
	if _, err := c.DBConfig(rawsqlite.ConfigDefensive, true); err != nil {
		return err
	}
	if err := c.Exec(serverStubs); err != nil {
		return err
	}
	g := newGuard()
	g.vtabs = true
	if err := c.SetAuthorizer(g.authorize); err != nil {
		return err
	}
	defer c.SetAuthorizer(nil)
	err = func() error {
		var created []Object
		for _, typ := range []string{"table", "index", "view", "trigger"} {
			for _, o := range objs {
				if o.Type != typ {
					continue
				}
				if err := checkedCreate(c, g, o); err != nil {
					return err
				}
				created = append(created, o)
			}
		}
		for _, o := range objs {
			if _, ok := createAction[o.Type]; !ok {
				return hostile("it holds an object of type %s", Printable(o.Type))
			}
		}
		if err := probe(c, g, created); err != nil {
			return err
		}
		return checkForeignKeys(c, created)
	}()
	var h *HostileError
	if errors.As(err, &h) {
		h.Source = "snapshot"
	}
	return err
}
