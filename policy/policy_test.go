package policy

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

// Expected decisions, per mode: "ok", or a code shorthand optionally
// followed by ": message substring".
//
//	RO  READ_ONLY_VIOLATION
//	PV  POLICY_VIOLATION
//	PT  PROTECTED_TABLE
//	SQL refused by SQLite itself (defensive mode, read-only schema), no violation
const (
	ok  = "ok"
	ro  = "RO"
	pv  = "PV"
	pt  = "PT"
	sqe = "SQL"

	protectedMsg = "memory_events is managed by the server and is append-only; it cannot be changed through SQL tools"
	selectOnly   = "only SELECT or WITH ... SELECT statements are allowed"
	useWrite     = "use write_query"
	useDestr     = "use destructive_query (it snapshots the database first)"
)

type policyCase struct {
	name string
	sql  string
	// sel, read, write, destr: expected outcome in Select, Read, Write, Destructive.
	sel, read, write, destr string
	// check, when set, runs on a plain connection after the statement was
	// allowed in Write or Destructive mode and must return 1.
	check string
}

func (c policyCase) want(m Mode) string {
	return [...]string{c.sel, c.read, c.write, c.destr}[m]
}

var policyCases = []policyCase{
	// Reads.
	{name: "select", sql: `SELECT * FROM notes`, sel: ok, read: ok, write: ok, destr: ok},
	{name: "select protected table", sql: `SELECT * FROM memory_events`, sel: ok, read: ok, write: ok, destr: ok},
	{name: "select protected view", sql: `SELECT * FROM query_errors`, sel: ok, read: ok, write: ok, destr: ok},
	{name: "select agent view", sql: `SELECT * FROM recent`, sel: ok, read: ok, write: ok, destr: ok},
	{name: "cte", sql: `WITH x AS (SELECT id FROM notes) SELECT * FROM x`, sel: ok, read: ok, write: ok, destr: ok},
	{name: "recursive cte", sql: `WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 5) SELECT n FROM c`, sel: ok, read: ok, write: ok, destr: ok},
	{name: "functions", sql: `SELECT lower(body), json_object('a', 1), printf('%d', id) FROM notes`, sel: ok, read: ok, write: ok, destr: ok},
	{name: "explain select", sql: `EXPLAIN SELECT * FROM notes`, sel: ok, read: ok, write: ok, destr: ok},
	{name: "explain query plan", sql: `EXPLAIN QUERY PLAN SELECT * FROM notes WHERE id = 1`, sel: ok, read: ok, write: ok, destr: ok},
	{name: "fts5 match", sql: `SELECT rowid, body FROM docs WHERE docs MATCH 'hello'`, sel: ok, read: ok, write: ok, destr: ok},
	// R*Tree prepares writes to its shadow tables when it connects, also
	// for a SELECT, and PRAGMAs that visit every table connect it too.
	{name: "rtree query (connect prepares shadow writes)", sql: `SELECT id FROM boxes WHERE minx >= 0 AND maxx <= 5`, sel: ok, read: ok, write: ok, destr: ok},
	{name: "rtree select star", sql: `SELECT * FROM boxes`, sel: ok, read: ok, write: ok, destr: ok},
	{name: "rtree count", sql: `SELECT count(*) FROM boxes`, sel: ok, read: ok, write: ok, destr: ok},
	{name: "rtree query plan", sql: `EXPLAIN QUERY PLAN SELECT * FROM boxes WHERE minx > 1`, sel: ok, read: ok, write: ok, destr: ok},
	{name: "rtreecheck", sql: `SELECT rtreecheck('boxes')`, sel: ok, read: ok, write: ok, destr: ok},
	{name: "integrity_check with virtual tables", sql: `PRAGMA integrity_check`, sel: ro, read: ok, write: ok, destr: ok},
	{name: "quick_check with virtual tables", sql: `PRAGMA quick_check`, sel: ro, read: ok, write: ok, destr: ok},
	{name: "table_list with virtual tables", sql: `PRAGMA table_list`, sel: ro, read: ok, write: ok, destr: ok},
	{name: "pragma_integrity_check with virtual tables", sql: `SELECT * FROM pragma_integrity_check`, sel: ok, read: ok, write: ok, destr: ok},
	{name: "pragma_quick_check with virtual tables", sql: `SELECT * FROM pragma_quick_check`, sel: ok, read: ok, write: ok, destr: ok},
	{name: "pragma_table_info over the schema", sql: `SELECT m.name, p.name FROM sqlite_schema AS m JOIN pragma_table_info(m.name) AS p`, sel: ok, read: ok, write: ok, destr: ok},
	{name: "dbstat read", sql: `SELECT count(*) FROM dbstat`, sel: ok, read: ok, write: ok, destr: ok},
	// Raw pages show free pages, which still hold deleted rows.
	{name: "sqlite_dbpage read", sql: `SELECT pgno, data FROM sqlite_dbpage LIMIT 1`,
		sel: ro + ": reading sqlite_dbpage is not allowed in any tool", read: pv + ": reading sqlite_dbpage is not allowed in any tool: it returns raw database pages", write: pv, destr: pv},
	{name: "sqlite_dbpage count", sql: `SELECT count(*) FROM sqlite_dbpage('main')`, sel: ro, read: pv, write: pv, destr: pv},
	{name: "sqlite_schema read", sql: `SELECT name FROM sqlite_schema`, sel: ok, read: ok, write: ok, destr: ok},

	// The memory's full-text index: read like any FTS5 table, never
	// written, not even by FTS commands that lose nothing.
	{name: "server index match", sql: `SELECT e.id, bm25(memory_events_fts), snippet(memory_events_fts, 0, '[', ']', '...', 8), highlight(memory_events_fts, 1, '<', '>') FROM memory_events_fts JOIN memory_events e ON e.id = memory_events_fts.rowid WHERE memory_events_fts MATCH 'first AND kind:note' ORDER BY bm25(memory_events_fts)`, sel: ok, read: ok, write: ok, destr: ok},
	{name: "server checkpoint index match", sql: `SELECT rowid FROM memory_checkpoints_fts WHERE memory_checkpoints_fts MATCH 'state'`, sel: ok, read: ok, write: ok, destr: ok},
	{name: "server index shadow read", sql: `SELECT count(*) FROM memory_events_fts_docsize`, sel: ok, read: ok, write: ok, destr: ok},
	{name: "server index rebuild", sql: `INSERT INTO memory_events_fts(memory_events_fts) VALUES('rebuild')`, sel: ro, read: pt, write: pt + ": memory_events_fts is the server's full-text index", destr: pt + ": 'rebuild', 'optimize' or 'delete-all'"},
	{name: "server index optimize", sql: `INSERT INTO memory_events_fts(memory_events_fts) VALUES('optimize')`, sel: ro, read: pt, write: pt, destr: pt},
	{name: "server index merge", sql: `INSERT INTO memory_events_fts(memory_events_fts, rank) VALUES('merge', 500)`, sel: ro, read: pt, write: pt, destr: pt},
	{name: "server index integrity-check", sql: `INSERT INTO memory_events_fts(memory_events_fts, rank) VALUES('integrity-check', 1)`, sel: ro, read: pt, write: pt, destr: pt},
	{name: "server index delete-all", sql: `INSERT INTO memory_events_fts(memory_events_fts) VALUES('delete-all')`, sel: ro, read: pt, write: pt, destr: pt},
	{name: "server index delete", sql: `INSERT INTO memory_events_fts(memory_events_fts, rowid, content, kind) VALUES('delete', 1, 'first event', 'note')`, sel: ro, read: pt, write: pt, destr: pt},
	{name: "server index rank setting", sql: `INSERT INTO memory_events_fts(memory_events_fts, rank) VALUES('rank', 'bm25(10.0, 1.0)')`, sel: ro, read: pt, write: pt, destr: pt},
	{name: "server index insert row", sql: `INSERT INTO memory_events_fts(rowid, content, kind) VALUES (2, 'planted', 'note')`, sel: ro, read: pt, write: pt, destr: pt},
	{name: "server index delete row", sql: `DELETE FROM memory_events_fts WHERE rowid = 1`, sel: ro, read: pt, write: pt, destr: pt},
	{name: "server checkpoint index rebuild", sql: `INSERT INTO memory_checkpoints_fts(memory_checkpoints_fts) VALUES('rebuild')`, sel: ro, read: pt, write: pt, destr: pt + ": memory_checkpoints_fts is the server's"},
	{name: "server index shadow write", sql: `INSERT INTO memory_events_fts_data VALUES (99, x'00')`, sel: ro, read: pt, write: pt, destr: pt + ": memory_events_fts_data is a shadow table of memory_events_fts"},
	// SQLite's defensive mode refuses these itself, before the authorizer.
	{name: "server index shadow update", sql: `UPDATE memory_events_fts_config SET v = 0`, sel: sqe + ": may not be modified", read: sqe, write: sqe, destr: sqe},
	{name: "server index shadow delete", sql: `DELETE FROM memory_events_fts_docsize`, sel: sqe + ": may not be modified", read: sqe, write: sqe, destr: sqe},
	{name: "server index drop", sql: `DROP TABLE memory_events_fts`, sel: ro, read: pt, write: pt, destr: pt},
	{name: "server index drop shadow", sql: `DROP TABLE memory_events_fts_idx`, sel: ro, read: pt, write: pt, destr: pt},
	{name: "server index rename", sql: `ALTER TABLE memory_events_fts RENAME TO mine`, sel: ro, read: pt, write: pt, destr: pt},
	{name: "server index shadow index", sql: `CREATE INDEX mine ON memory_events_fts_docsize(sz)`, sel: ro, read: pt, write: pt, destr: pt},
	{name: "server index shadow trigger", sql: `CREATE TRIGGER mine AFTER INSERT ON memory_events_fts_data BEGIN SELECT 1; END`, sel: sqe + ": cannot create triggers on shadow tables", read: sqe, write: sqe, destr: sqe},

	// Disguises.
	{name: "comment disguise", sql: "/* SELECT */ DELETE FROM notes -- just a select",
		sel:   ro + ": DELETE is not allowed in query_database: " + selectOnly,
		read:  ro + ": DELETE is not allowed in read_query; " + useDestr,
		write: ro + ": DELETE is not allowed in write_query; " + useDestr, destr: ok,
		check: `SELECT count(*) = 0 FROM notes`},
	{name: "casing", sql: `dElEtE fRoM NOTES`, sel: ro, read: ro, write: ro + ": DELETE is not allowed in write_query", destr: ok},
	{name: "quoted protected table", sql: `DELETE FROM "memory_events"`, sel: ro + ": " + protectedMsg, read: pt + ": " + protectedMsg, write: pt + ": " + protectedMsg, destr: pt + ": " + protectedMsg},
	{name: "mixed-case protected table", sql: `delete from Memory_Events where id = 1`, sel: ro, read: pt, write: pt, destr: pt + ": " + protectedMsg},
	{name: "bracket-quoted protected table", sql: `UPDATE [memory_events] SET content = 'x'`, sel: ro, read: pt, write: pt, destr: pt},
	{name: "schema-qualified protected table", sql: `UPDATE main.memory_events SET content = 'x'`, sel: ro, read: pt, write: pt, destr: pt},
	{name: "cte delete", sql: `WITH doomed AS (SELECT id FROM notes) DELETE FROM notes WHERE id IN (SELECT id FROM doomed)`, sel: ro, read: ro, write: ro + ": DELETE is not allowed in write_query", destr: ok},
	{name: "insert select", sql: `INSERT INTO notes(body) SELECT content FROM memory_events`,
		sel: ro, read: ro + ": INSERT is not allowed in read_query; " + useWrite, write: ok, destr: ok,
		check: `SELECT count(*) = 3 FROM notes`},
	{name: "insert select into protected", sql: `INSERT INTO memory_events SELECT * FROM memory_events`, sel: ro, read: pt, write: pt, destr: pt},
	{name: "upsert", sql: `INSERT INTO notes(body, tag) VALUES ('x', 'a') ON CONFLICT(tag) DO UPDATE SET body = excluded.body`,
		sel: ro, read: ro + ": INSERT is not allowed in read_query", write: ok, destr: ok,
		check: `SELECT body = 'x' FROM notes WHERE tag = 'a'`},
	{name: "upsert into protected", sql: `INSERT INTO memory_events(id, ts, session, content, prev_hash, hash) VALUES (1, 't', 's', 'c', 'p', 'h') ON CONFLICT DO NOTHING`, sel: ro, read: pt, write: pt, destr: pt},
	{name: "replace", sql: `REPLACE INTO notes(id, body, tag) VALUES (1, 'replaced', 'a')`, sel: ro, read: ro, write: ok, destr: ok,
		check: `SELECT body = 'replaced' FROM notes WHERE id = 1`},
	{name: "insert returning", sql: `INSERT INTO notes(body) VALUES ('r') RETURNING id, body`, sel: ro, read: ro, write: ok, destr: ok},
	{name: "delete returning", sql: `DELETE FROM notes WHERE id = 1 RETURNING *`, sel: ro, read: ro, write: ro, destr: ok},
	{name: "update", sql: `UPDATE notes SET body = 'u' WHERE id = 1`, sel: ro, read: ro + ": UPDATE is not allowed in read_query; " + useWrite, write: ok, destr: ok,
		check: `SELECT body = 'u' FROM notes WHERE id = 1`},
	{name: "update protected checkpoints", sql: `UPDATE memory_checkpoints SET summary = 'x'`, sel: ro, read: pt, write: pt, destr: pt + ": memory_checkpoints is managed by the server"},
	{name: "read cluster guard", sql: `SELECT k, ok FROM memory_cluster_guard`, sel: ok, read: ok, write: ok, destr: ok},
	{name: "write cluster guard", sql: `INSERT OR REPLACE INTO memory_cluster_guard(k, ok) VALUES (1, 1)`, sel: ro, read: pt, write: pt, destr: pt + ": memory_cluster_guard is managed by the server"},
	{name: "delete cluster guard", sql: `DELETE FROM memory_cluster_guard`, sel: ro, read: pt, write: pt, destr: pt + ": memory_cluster_guard is managed by the server"},
	{name: "drop cluster guard", sql: `DROP TABLE memory_cluster_guard`, sel: ro, read: pt, write: pt, destr: pt + ": memory_cluster_guard is managed by the server"},
	{name: "drop chain guard index", sql: `DROP INDEX memory_events_prev_hash`, sel: ro, read: pt, write: pt, destr: pt + ": memory_events"},
	{name: "insert protected query_log", sql: `INSERT INTO query_log(ts, session, tool, ok, duration_ms) VALUES ('t', 's', 'x', 1, 0)`, sel: ro, read: pt, write: pt, destr: pt + ": query_log is managed by the server"},
	// SQLite refuses writes to a view without INSTEAD OF triggers before it
	// asks the authorizer.
	{name: "delete from protected view", sql: `DELETE FROM query_errors`, sel: sqe + ": cannot modify query_errors", read: sqe, write: sqe, destr: sqe},
	{name: "trigger body writes protected table", sql: `INSERT INTO sneaky VALUES ('x')`,
		sel: ro, read: ro + ": INSERT is not allowed in read_query",
		write: pt + ": " + protectedMsg + " (trigger sneaky_log writes to it)", destr: pt + ": trigger sneaky_log"},
	{name: "trigger body deletes", sql: `INSERT INTO purge VALUES ('first')`,
		sel: ro, read: ro, write: ro + ": DELETE (in trigger purge_notes) is not allowed in write_query; " + useDestr, destr: ok,
		check: `SELECT count(*) = 1 FROM notes`},
	{name: "trigger body inserts", sql: `INSERT INTO logged VALUES (7)`, sel: ro, read: ro, write: ok, destr: ok,
		check: `SELECT count(*) = 1 FROM audit WHERE x = 7`},
	{name: "foreign key cascade from replace", sql: `REPLACE INTO parent(id, name) VALUES (1, 'q')`, sel: ro, read: ro, write: ro + ": DELETE is not allowed in write_query", destr: ok,
		check: `SELECT count(*) = 0 FROM child`},
	{name: "foreign key cascade from delete", sql: `DELETE FROM parent WHERE id = 1`, sel: ro, read: ro, write: ro, destr: ok,
		check: `SELECT count(*) = 0 FROM child`},

	// FTS5 and R*Tree: creation and upkeep of their shadow tables.
	{name: "create fts5", sql: `CREATE VIRTUAL TABLE notes_fts USING fts5(body)`,
		sel: ro, read: ro + ": CREATE VIRTUAL TABLE is not allowed in read_query; " + useWrite, write: ok, destr: ok,
		check: `SELECT count(*) = 5 FROM pragma_table_list WHERE type = 'shadow' AND name LIKE 'notes_fts%'`},
	{name: "create fts5 uppercase module", sql: `CREATE VIRTUAL TABLE NF USING FTS5(body, tokenize = 'porter')`, sel: ro, read: ro, write: ok, destr: ok},
	{name: "create rtree", sql: `CREATE VIRTUAL TABLE areas USING rtree(id, x0, x1)`, sel: ro, read: ro, write: ok, destr: ok,
		check: `SELECT count(*) = 3 FROM pragma_table_list WHERE type = 'shadow' AND name LIKE 'areas%'`},
	{name: "create other virtual table", sql: `CREATE VIRTUAL TABLE st USING dbstat`,
		sel: ro, read: pv + ": CREATE VIRTUAL TABLE ... USING dbstat is not allowed in any tool; only the fts5 and rtree modules are", write: pv, destr: pv},
	{name: "create fts4 (not compiled in)", sql: `CREATE VIRTUAL TABLE f4 USING fts4(body)`, sel: ro, read: pv, write: pv, destr: pv},
	{name: "fts5 insert", sql: `INSERT INTO docs(body) VALUES ('zebra crossing')`, sel: ro, read: ro, write: ok, destr: ok,
		check: `SELECT count(*) = 1 FROM docs WHERE docs MATCH 'zebra'`},
	{name: "fts5 update", sql: `UPDATE docs SET body = 'zebra' WHERE rowid = 1`, sel: ro, read: ro, write: ok, destr: ok,
		check: `SELECT (SELECT count(*) FROM docs WHERE docs MATCH 'zebra') = 1 AND (SELECT count(*) FROM docs WHERE docs MATCH 'hello') = 0`},
	{name: "fts5 delete", sql: `DELETE FROM docs WHERE rowid = 1`, sel: ro, read: ro, write: ro + ": DELETE is not allowed in write_query", destr: ok,
		check: `SELECT count(*) = 0 FROM docs WHERE docs MATCH 'hello'`},
	{name: "fts5 optimize", sql: `INSERT INTO docs(docs) VALUES ('optimize')`, sel: ro, read: ro, write: ok, destr: ok,
		check: `SELECT count(*) = 1 FROM docs WHERE docs MATCH 'hello'`},
	{name: "fts5 rebuild", sql: `INSERT INTO docs(docs) VALUES ('rebuild')`, sel: ro, read: ro, write: ok, destr: ok,
		check: `SELECT count(*) = 1 FROM docs WHERE docs MATCH 'hello'`},
	{name: "fts5 integrity-check", sql: `INSERT INTO docs(docs) VALUES ('integrity-check')`, sel: ro, read: ro, write: ok, destr: ok},
	{name: "fts5 automerge setting", sql: `INSERT INTO docs(docs, rank) VALUES ('automerge', 4)`, sel: ro, read: ro, write: ok, destr: ok},
	// FTS5 commands that remove data belong to destructive_query; so does a
	// command computed while the statement runs.
	{name: "fts5 delete-all on a contentless table", sql: `INSERT INTO bare(bare) VALUES ('delete-all')`, sel: ro, read: ro,
		write: ro + ": INSERT INTO bare(bare) VALUES('delete-all') is not allowed in write_query: 'delete-all' is an FTS command that removes indexed data", destr: ok,
		check: `SELECT count(*) = 0 FROM bare`},
	{name: "fts5 delete by rowid", sql: `INSERT INTO bare(bare, rowid, body) VALUES ('delete', 1, 'hello world')`, sel: ro, read: ro, write: ro + ": " + useDestr, destr: ok},
	{name: "fts5 command from a subquery", sql: `INSERT INTO bare(bare) SELECT 'delete-all' FROM notes LIMIT 1`, sel: ro, read: ro, write: ro + ": this INSERT sets the FTS command column of bare", destr: ok},
	{name: "fts5 command from a trigger", sql: `INSERT INTO fts_commands VALUES ('delete-all')`, sel: ro, read: ro, write: ro + ": computed while it runs", destr: ok,
		check: `SELECT count(*) = 0 FROM bare`},
	{name: "fts5 command spelled in capitals", sql: `INSERT INTO bare(bare) VALUES ('DELETE-ALL')`, sel: ro, read: ro, write: ro, destr: ok},
	{name: "rtree insert", sql: `INSERT INTO boxes VALUES (3, 5, 6, 5, 6)`, sel: ro, read: ro, write: ok, destr: ok,
		check: `SELECT count(*) = 3 FROM boxes`},
	{name: "rtree bulk insert splits nodes", sql: `WITH RECURSIVE s(v) AS (SELECT 1 UNION ALL SELECT v + 1 FROM s WHERE v < 300) INSERT INTO boxes SELECT v + 10, v, v + 1, v, v + 1 FROM s`, sel: ro, read: ro, write: ok, destr: ok,
		check: `SELECT count(*) = 302 FROM boxes`},
	{name: "rtree update", sql: `UPDATE boxes SET maxx = 9 WHERE id = 1`, sel: ro, read: ro, write: ok, destr: ok,
		check: `SELECT maxx = 9 FROM boxes WHERE id = 1`},
	{name: "rtree delete", sql: `DELETE FROM boxes WHERE id = 1`, sel: ro, read: ro, write: ro, destr: ok,
		check: `SELECT count(*) = 1 FROM boxes`},
	// Shadow tables are the virtual tables' upkeep in the writing modes;
	// defensive mode keeps agent SQL off them.
	{name: "shadow table direct delete", sql: `DELETE FROM docs_data`, sel: sqe + ": may not be modified", read: sqe, write: sqe + ": may not be modified", destr: sqe},
	{name: "shadow table direct insert", sql: `INSERT INTO boxes_node VALUES (99, x'00')`, sel: ro, read: ro, write: sqe, destr: sqe},
	{name: "shadow table direct update", sql: `UPDATE docs_config SET v = 0`, sel: sqe, read: sqe, write: sqe, destr: sqe},
	{name: "drop fts5", sql: `DROP TABLE docs`, sel: ro, read: ro, write: ro + ": DROP TABLE of a virtual table is not allowed in write_query", destr: ok,
		check: `SELECT count(*) = 0 FROM sqlite_schema WHERE name LIKE 'docs%'`},
	{name: "drop rtree", sql: `DROP TABLE boxes`, sel: ro, read: ro, write: ro, destr: ok,
		check: `SELECT count(*) = 0 FROM sqlite_schema WHERE name LIKE 'boxes%'`},
	{name: "drop shadow table", sql: `DROP TABLE docs_data`, sel: ro, read: ro, write: ro, destr: sqe + ": may not be dropped"},

	// PRAGMAs.
	{name: "pragma table_info", sql: `PRAGMA table_info(notes)`, sel: ro + ": PRAGMA table_info is not allowed in query_database: " + selectOnly + "; read it as a table instead: SELECT * FROM pragma_table_info('notes')", read: ok, write: ok, destr: ok},
	{name: "pragma table_xinfo qualified", sql: `PRAGMA main.table_xinfo('notes')`, sel: ro, read: ok, write: ok, destr: ok},
	{name: "pragma table_info of protected", sql: `PRAGMA table_info = memory_events`, sel: ro, read: ok, write: ok, destr: ok},
	{name: "pragma uppercase", sql: `PRAGMA INDEX_LIST(notes)`, sel: ro, read: ok, write: ok, destr: ok},
	{name: "pragma index_info", sql: `PRAGMA index_info(query_log_ts)`, sel: ro, read: ok, write: ok, destr: ok},
	{name: "pragma foreign_key_list", sql: `PRAGMA foreign_key_list(child)`, sel: ro, read: ok, write: ok, destr: ok},
	{name: "pragma foreign_key_check", sql: `PRAGMA foreign_key_check`, sel: ro, read: ok, write: ok, destr: ok},
	{name: "pragma table_list", sql: `PRAGMA table_list`, sel: ro, read: ok, write: ok, destr: ok},
	{name: "pragma function_list", sql: `PRAGMA function_list`, sel: ro, read: ok, write: ok, destr: ok},
	{name: "pragma collation_list", sql: `PRAGMA collation_list`, sel: ro, read: ok, write: ok, destr: ok},
	{name: "pragma database_list", sql: `PRAGMA database_list`, sel: ro, read: ok, write: ok, destr: ok},
	{name: "pragma compile_options", sql: `PRAGMA compile_options`, sel: ro, read: ok, write: ok, destr: ok},
	{name: "pragma integrity_check", sql: `PRAGMA integrity_check(10)`, sel: ro + ": PRAGMA integrity_check is not allowed in query_database: " + selectOnly + "; read it as a table instead: SELECT * FROM pragma_integrity_check('10')", read: ok, write: ok, destr: ok},
	{name: "pragma quick_check", sql: `PRAGMA quick_check`, sel: ro, read: ok, write: ok, destr: ok},
	{name: "pragma page_count", sql: `PRAGMA page_count`, sel: ro, read: ok, write: ok, destr: ok},
	{name: "pragma page_size", sql: `PRAGMA page_size`, sel: ro, read: ok, write: ok, destr: ok},
	{name: "pragma freelist_count", sql: `PRAGMA freelist_count`, sel: ro, read: ok, write: ok, destr: ok},
	{name: "pragma encoding", sql: `PRAGMA encoding`, sel: ro, read: ok, write: ok, destr: ok},
	{name: "pragma foreign_keys read", sql: `PRAGMA foreign_keys`, sel: ro, read: ok, write: ok, destr: ok},
	{name: "pragma data_version", sql: `PRAGMA data_version`, sel: ro, read: ok, write: ok, destr: ok},
	// A PRAGMA with a value sets it, whatever the value: '' too (it turns
	// query_only off, leaves WAL, stores user_version 0).
	{name: "pragma query_only empty value", sql: `PRAGMA query_only = ''`,
		sel: ro, read: pv + ": PRAGMA query_only = '' is not allowed in any tool: a PRAGMA with a value sets it", write: pv, destr: pv},
	{name: "pragma auto_vacuum empty value", sql: `PRAGMA auto_vacuum = ''`, sel: ro, read: pv, write: pv, destr: pv},
	{name: "pragma auto_vacuum empty call", sql: `PRAGMA auto_vacuum('')`, sel: ro, read: pv, write: pv, destr: pv},
	{name: "pragma user_version statement", sql: `PRAGMA user_version`, sel: ro, read: ok, write: ok, destr: ok},
	{name: "pragma journal_mode statement", sql: `PRAGMA journal_mode`, sel: ro, read: ok, write: ok, destr: ok},
	{name: "pragma journal_mode empty value", sql: `PRAGMA journal_mode = ''`, sel: ro, read: pv + ": PRAGMA journal_mode = ''", write: pv, destr: pv},
	{name: "pragma user_version empty value", sql: `PRAGMA user_version = ''`, sel: ro, read: pv, write: pv, destr: pv},
	{name: "pragma application_id statement", sql: `PRAGMA main.application_id`, sel: ro, read: ok, write: ok, destr: ok},
	{name: "explain pragma user_version", sql: `EXPLAIN PRAGMA user_version`, sel: ro, read: ok, write: ok, destr: ok},
	{name: "explain pragma with a value", sql: `EXPLAIN PRAGMA user_version = 3`, sel: ro, read: pv, write: pv, destr: pv},
	{name: "pragma user_version write", sql: `PRAGMA user_version = 5`,
		sel: ro, read: pv + ": PRAGMA user_version = 5 is not allowed in any tool", write: pv, destr: pv},
	{name: "pragma journal_mode write", sql: `PRAGMA journal_mode = wal`, sel: ro, read: pv, write: pv, destr: pv},
	{name: "pragma foreign_keys write", sql: `PRAGMA foreign_keys = OFF`, sel: ro, read: pv, write: pv, destr: pv},
	{name: "pragma trusted_schema write", sql: `PRAGMA trusted_schema = 1`, sel: ro, read: pv, write: pv, destr: pv},
	{name: "pragma writable_schema write", sql: `PRAGMA writable_schema = ON`, sel: ro, read: pv + ": PRAGMA writable_schema = ON", write: pv, destr: pv},
	{name: "pragma writable_schema read", sql: `PRAGMA writable_schema`, sel: ro, read: pv, write: pv, destr: pv},
	{name: "pragma unknown", sql: `PRAGMA no_such_pragma`, sel: ro, read: pv + ": PRAGMA no_such_pragma is not allowed in any tool", write: pv, destr: pv},
	{name: "pragma optimize", sql: `PRAGMA optimize`, sel: ro, read: pv, write: pv, destr: pv},
	{name: "pragma wal_checkpoint", sql: `PRAGMA wal_checkpoint(TRUNCATE)`, sel: ro, read: pv, write: pv, destr: pv},
	{name: "pragma incremental_vacuum", sql: `PRAGMA incremental_vacuum`, sel: ro, read: pv, write: pv, destr: pv},
	{name: "pragma function table_info", sql: `SELECT name, type FROM pragma_table_info('notes')`, sel: ok, read: ok, write: ok, destr: ok},
	{name: "pragma function table_list", sql: `SELECT name FROM pragma_table_list WHERE type = 'shadow'`, sel: ok, read: ok, write: ok, destr: ok},
	{name: "pragma function user_version", sql: `SELECT * FROM pragma_user_version`, sel: ok, read: ok, write: ok, destr: ok},
	{name: "pragma function journal_mode", sql: `SELECT journal_mode FROM pragma_journal_mode`, sel: ok, read: ok, write: ok, destr: ok},
	{name: "pragma function argument is a schema", sql: `SELECT * FROM pragma_journal_mode('wal')`, sel: sqe + ": unknown database", read: sqe, write: sqe, destr: sqe},
	{name: "pragma function unknown", sql: `SELECT * FROM pragma_writable_schema`, sel: ro, read: pv, write: pv, destr: pv},

	// Temporary objects.
	{name: "temp table", sql: `CREATE TEMP TABLE scratch(x)`, sel: ro, read: pv + ": CREATE TEMP TABLE is not allowed in any tool", write: pv, destr: pv},
	{name: "temporary view", sql: `CREATE TEMPORARY VIEW tv AS SELECT 1`, sel: ro, read: pv, write: pv, destr: pv},
	{name: "temp trigger", sql: `CREATE TEMP TRIGGER tt AFTER INSERT ON notes BEGIN SELECT 1; END`, sel: ro, read: pv, write: pv, destr: pv + ": CREATE TEMP TRIGGER"},
	{name: "temp schema table", sql: `CREATE TABLE temp.scratch(x)`, sel: ro, read: pv + ": CREATE TABLE in the temp database is not allowed", write: pv, destr: pv},

	// ATTACH, DETACH, VACUUM: no file may appear.
	{name: "attach file", sql: `ATTACH '{dir}/other.db' AS other`, sel: ro, read: pv + ": ATTACH is not allowed in any tool", write: pv, destr: pv},
	{name: "attach memory", sql: `ATTACH ':memory:' AS m`, sel: ro, read: pv, write: pv, destr: pv},
	{name: "detach", sql: `DETACH other`, sel: ro, read: pv + ": DETACH is not allowed in any tool", write: pv, destr: pv},
	{name: "vacuum", sql: `VACUUM`, sel: ro, read: pv + ": VACUUM", write: pv, destr: pv},
	{name: "vacuum schema", sql: `VACUUM main`, sel: ro, read: pv, write: pv, destr: pv},
	{name: "vacuum into", sql: `VACUUM INTO '{dir}/copy.db'`, sel: ro + ": VACUUM INTO", read: pv, write: pv, destr: pv + ": VACUUM INTO"},

	// Transactions and savepoints.
	{name: "begin", sql: `BEGIN`, sel: ro, read: pv + ": BEGIN is not allowed in any tool", write: pv, destr: pv},
	{name: "begin immediate", sql: `BEGIN IMMEDIATE`, sel: ro, read: pv, write: pv, destr: pv},
	{name: "commit", sql: `COMMIT`, sel: ro, read: pv + ": COMMIT is not allowed", write: pv, destr: pv},
	{name: "end", sql: `END TRANSACTION`, sel: ro, read: pv, write: pv, destr: pv},
	{name: "rollback", sql: `ROLLBACK`, sel: ro, read: pv + ": ROLLBACK is not allowed", write: pv, destr: pv},
	{name: "savepoint", sql: `SAVEPOINT sp`, sel: ro, read: pv + ": SAVEPOINT is not allowed in any tool", write: pv, destr: pv},
	{name: "release", sql: `RELEASE sp`, sel: ro, read: pv + ": RELEASE is not allowed", write: pv, destr: pv},
	{name: "rollback to", sql: `ROLLBACK TO sp`, sel: ro, read: pv + ": ROLLBACK TO is not allowed", write: pv, destr: pv},

	// Functions that reach outside the database.
	{name: "load_extension", sql: `SELECT load_extension('libevil')`, sel: ro + ": load_extension() is not allowed", read: pv + ": load_extension() is not allowed in any tool", write: pv, destr: pv},
	{name: "load_extension uppercase in subquery", sql: `SELECT * FROM notes WHERE body = (SELECT LOAD_EXTENSION('x', 'y'))`, sel: ro, read: pv, write: pv, destr: pv},
	{name: "readfile does not exist", sql: `SELECT readfile('/etc/passwd')`, sel: sqe + ": no such function", read: sqe, write: sqe, destr: sqe},

	// SQLite's own tables.
	{name: "sqlite_sequence delete", sql: `DELETE FROM sqlite_sequence`, sel: ro, read: pv + ": DELETE on sqlite_sequence is not allowed in any tool", write: pv, destr: pv},
	{name: "sqlite_sequence update", sql: `UPDATE sqlite_sequence SET seq = 0`, sel: ro, read: pv, write: pv, destr: pv},
	{name: "sqlite_stat1 insert", sql: `INSERT INTO sqlite_stat1 VALUES ('notes', NULL, '1')`, sel: ro, read: pv, write: pv + ": INSERT on sqlite_stat1", destr: pv},
	{name: "sqlite_stat1 delete", sql: `DELETE FROM sqlite_stat1`, sel: ro, read: pv, write: pv, destr: pv},
	{name: "sqlite_dbpage update", sql: `UPDATE sqlite_dbpage SET data = zeroblob(4096) WHERE pgno = 1`, sel: ro, read: pv, write: pv, destr: pv + ": UPDATE on sqlite_dbpage"},
	{name: "sqlite_dbpage insert", sql: `INSERT INTO sqlite_dbpage VALUES (1, zeroblob(4096))`, sel: ro, read: pv, write: pv, destr: pv},
	{name: "sqlite_schema delete", sql: `DELETE FROM sqlite_master`, sel: sqe + ": may not be modified", read: sqe, write: sqe, destr: sqe},
	{name: "sqlite_schema update", sql: `UPDATE sqlite_schema SET sql = 'x'`, sel: sqe, read: sqe, write: sqe, destr: sqe},
	{name: "drop sqlite_stat1", sql: `DROP TABLE sqlite_stat1`, sel: ro, read: pv, write: pv, destr: pv + ": DROP TABLE on sqlite_stat1"},
	{name: "autoincrement upkeep", sql: `INSERT INTO notes(body) VALUES ('x')`, sel: ro, read: ro, write: ok, destr: ok,
		check: `SELECT seq = 3 FROM sqlite_sequence WHERE name = 'notes'`},
	{name: "drop autoincrement table", sql: `DROP TABLE notes`, sel: ro, read: ro, write: ro + ": DROP TABLE is not allowed in write_query; " + useDestr, destr: ok,
		check: `SELECT count(*) = 0 FROM sqlite_sequence WHERE name = 'notes'`},
	{name: "rename autoincrement table", sql: `ALTER TABLE notes RENAME TO jottings`, sel: ro, read: ro, write: ro + ": ALTER TABLE is not allowed in write_query", destr: ok,
		check: `SELECT count(*) = 1 FROM sqlite_sequence WHERE name = 'jottings'`},
	{name: "analyze", sql: `ANALYZE`, sel: ro, read: ro + ": ANALYZE is not allowed in read_query; " + useWrite, write: ok, destr: ok},
	// ANALYZE t deletes t's rows from sqlite_stat1 before it reports the
	// ANALYZE itself, exactly like an agent's DELETE FROM sqlite_stat1.
	{name: "analyze table", sql: `ANALYZE notes`, sel: ro, read: pv, write: pv + ": run ANALYZE without a name", destr: pv},
	{name: "analyze protected table", sql: `ANALYZE memory_events`, sel: ro, read: pv, write: pv, destr: pv},
	{name: "reindex", sql: `REINDEX`, sel: ro, read: ro + ": REINDEX is not allowed in read_query", write: ok, destr: ok},
	{name: "reindex table", sql: `REINDEX notes`, sel: ro, read: ro, write: ok, destr: ok},

	// DDL.
	{name: "create table", sql: `CREATE TABLE t2(a, b)`, sel: ro + ": CREATE TABLE is not allowed in query_database", read: ro + ": CREATE TABLE is not allowed in read_query; " + useWrite, write: ok, destr: ok,
		check: `SELECT count(*) = 1 FROM sqlite_schema WHERE name = 't2'`},
	{name: "create table as select", sql: `CREATE TABLE copy AS SELECT * FROM memory_events`, sel: ro, read: ro, write: ok, destr: ok,
		check: `SELECT count(*) = 1 FROM copy`},
	{name: "create table named like protected", sql: `CREATE TABLE IF NOT EXISTS memory_events(x)`, sel: ro, read: pt, write: pt + ": " + protectedMsg, destr: pt},
	{name: "create index", sql: `CREATE INDEX notes_body ON notes(body)`, sel: ro, read: ro + ": CREATE INDEX is not allowed in read_query", write: ok, destr: ok},
	{name: "create index on protected", sql: `CREATE INDEX me_ts ON memory_events(ts)`, sel: ro, read: pt, write: pt + ": " + protectedMsg, destr: pt},
	{name: "create unique index on protected", sql: `CREATE UNIQUE INDEX IF NOT EXISTS ql ON query_log(ts, id)`, sel: ro, read: pt, write: pt, destr: pt},
	{name: "create view", sql: `CREATE VIEW v AS SELECT 1`, sel: ro + ": " + selectOnly, read: pv + ": CREATE VIEW is not allowed in read_query; use create_view",
		write: pv + ": CREATE VIEW is not allowed in write_query; use create_view", destr: pv + ": CREATE VIEW is not allowed in destructive_query; use create_view"},
	{name: "create view if not exists", sql: `CREATE VIEW IF NOT EXISTS v2 AS SELECT * FROM notes`, sel: ro, read: pv, write: pv, destr: pv},
	{name: "drop view", sql: `DROP VIEW recent`, sel: ro, read: ro, write: ro + ": DROP VIEW is not allowed in write_query", destr: ok},
	{name: "drop protected view", sql: `DROP VIEW query_errors`, sel: ro, read: pt, write: pt, destr: pt + ": query_errors is managed by the server"},
	{name: "drop protected table", sql: `DROP TABLE memory_events`, sel: ro, read: pt, write: pt, destr: pt + ": " + protectedMsg},
	{name: "drop protected table quoted", sql: `DROP TABLE IF EXISTS "MEMORY_CHECKPOINTS"`, sel: ro, read: pt, write: pt, destr: pt},
	{name: "drop index of protected table", sql: `DROP INDEX query_log_ts`, sel: ro, read: pt, write: pt, destr: pt + ": query_log"},
	{name: "drop autoindex", sql: `DROP INDEX sqlite_autoindex_notes_1`, sel: sqe, read: sqe, write: sqe, destr: sqe},
	{name: "rename protected table", sql: `ALTER TABLE memory_events RENAME TO me_old`, sel: ro, read: pt, write: pt, destr: pt + ": " + protectedMsg},
	{name: "add column to protected table", sql: `ALTER TABLE query_log ADD COLUMN x`, sel: ro, read: pt, write: pt, destr: pt},
	{name: "rename column of protected table", sql: `ALTER TABLE memory_checkpoints RENAME COLUMN summary TO s`, sel: ro, read: pt, write: pt, destr: pt},
	{name: "drop column of protected table", sql: `ALTER TABLE query_log DROP COLUMN detail`, sel: ro, read: pt, write: pt, destr: pt},
	{name: "add column", sql: `ALTER TABLE notes ADD COLUMN extra TEXT`, sel: ro, read: ro, write: ro, destr: ok},
	{name: "drop protected trigger", sql: `DROP TRIGGER memory_events_no_update`, sel: ro, read: pt, write: pt, destr: pt + ": " + protectedMsg},
	{name: "drop protected trigger if exists", sql: `DROP TRIGGER IF EXISTS query_log_no_delete`, sel: ro, read: pt, write: pt, destr: pt},
	{name: "create trigger on protected table", sql: `CREATE TRIGGER me_tr AFTER INSERT ON memory_events BEGIN SELECT 1; END`, sel: ro, read: pt, write: pt, destr: pt + ": " + protectedMsg},
	{name: "create instead-of trigger on protected view", sql: `CREATE TRIGGER qe_tr INSTEAD OF INSERT ON query_errors BEGIN SELECT 1; END`, sel: ro, read: pt, write: pt, destr: pt},
	{name: "create trigger", sql: `CREATE TRIGGER notes_tr AFTER INSERT ON notes BEGIN INSERT INTO audit VALUES (NEW.id); END`,
		sel: ro, read: ro, write: ro + ": CREATE TRIGGER is not allowed in write_query; " + useDestr, destr: ok},
	// Trigger bodies are compiled when they fire, not when created; firing
	// one that writes a protected table is refused (see sneaky_log above).
	{name: "create trigger whose body writes protected", sql: `CREATE TRIGGER evil AFTER INSERT ON notes BEGIN DELETE FROM memory_events; END`, sel: ro, read: ro, write: ro, destr: ok},
	{name: "drop trigger", sql: `DROP TRIGGER sneaky_log`, sel: ro, read: ro, write: ro + ": DROP TRIGGER is not allowed in write_query", destr: ok},
}

func TestPolicy(t *testing.T) {
	for _, c := range policyCases {
		for m := Select; m <= Destructive; m++ {
			t.Run(c.name+"/"+m.String(), func(t *testing.T) {
				t.Parallel()
				checkCase(t, templates.full, m, Options{}, c.sql, c.want(m), c.check)
			})
		}
	}
}

var codes = map[string]errcode.Code{ro: errcode.ReadOnly, pv: errcode.Policy, pt: errcode.Protected}

// checkCase runs sql in mode and compares the outcome with want.
func checkCase(t *testing.T, template string, m Mode, opts Options, sql, want, check string) {
	t.Helper()
	out := run(t, template, m, opts, sql)
	if out.protAfter != out.protBefore {
		t.Errorf("protected objects changed:\nbefore:\n%s\nafter:\n%s", out.protBefore, out.protAfter)
	}
	if len(out.extraFiles) > 0 {
		t.Errorf("files appeared next to the database: %v", out.extraFiles)
	}
	code, msg, _ := strings.Cut(want, ": ")
	switch code {
	case ok:
		if out.violation != nil || out.err != nil {
			t.Fatalf("want allowed, got violation %v, error %v", out.violation, out.err)
		}
		if m <= Read && out.fileChanged {
			t.Errorf("database file changed in %s mode", m)
		}
		if check != "" && m >= Write {
			n, err := queryInt(t, out.dbPath, check)
			if err != nil || n != 1 {
				t.Errorf("check %q = %d, %v; want 1", check, n, err)
			}
		}
	case sqe:
		if out.violation != nil {
			t.Fatalf("want an SQLite error, got violation %v", out.violation)
		}
		if out.err == nil || !strings.Contains(out.err.Error(), msg) {
			t.Fatalf("want an SQLite error containing %q, got %v", msg, out.err)
		}
		if out.fileChanged {
			t.Errorf("database file changed after a refused statement")
		}
	default:
		if out.violation == nil {
			t.Fatalf("want %s, got no violation (error %v)", want, out.err)
		}
		if out.violation.Code != codes[code] || !strings.Contains(out.violation.Message, msg) {
			t.Fatalf("want %s containing %q, got %v", codes[code], msg, out.violation)
		}
		// A denied column read fails as "access to t.c is prohibited".
		if out.err == nil || !strings.Contains(out.err.Error(), "not authorized") && !strings.Contains(out.err.Error(), "authorization denied") && !strings.Contains(out.err.Error(), "is prohibited") {
			t.Errorf("want the statement to fail as not authorized, got %v", out.err)
		}
		if out.fileChanged {
			t.Errorf("database file changed after a refused statement")
		}
	}
}

// TestPolicyFreshDatabase covers DDL whose bookkeeping creates SQLite's own
// tables (sqlite_sequence, sqlite_stat1) on a database that has none yet.
func TestPolicyFreshDatabase(t *testing.T) {
	cases := []struct{ name, sql, check string }{
		{"first autoincrement table", `CREATE TABLE a(id INTEGER PRIMARY KEY AUTOINCREMENT, x)`, `SELECT count(*) = 1 FROM sqlite_schema WHERE name = 'sqlite_sequence'`},
		{"first analyze", `ANALYZE`, `SELECT count(*) = 1 FROM sqlite_stat1`},
		{"first fts5 table", `CREATE VIRTUAL TABLE f USING fts5(x)`, `SELECT count(*) = 0 FROM f`},
		{"first rtree table", `CREATE VIRTUAL TABLE r USING rtree(id, a, b)`, `SELECT count(*) = 0 FROM r`},
	}
	for _, c := range cases {
		for _, m := range []Mode{Write, Destructive} {
			t.Run(c.name+"/"+m.String(), func(t *testing.T) {
				t.Parallel()
				checkCase(t, templates.empty, m, Options{}, c.sql, ok, c.check)
			})
		}
	}
}

// TestCreateViewAllowance covers create_view's own statements.
func TestCreateViewAllowance(t *testing.T) {
	cases := []struct {
		name, view, sql, want string
	}{
		{"create the named view", "digest", `CREATE VIEW "digest" AS SELECT id FROM notes`, ok},
		{"name matches case-insensitively", "digest", `CREATE VIEW Digest AS SELECT id FROM notes`, ok},
		{"replace drops the named view", "recent", `DROP VIEW recent`, ok},
		{"another view", "digest", `CREATE VIEW other AS SELECT 1`, pv + ": use create_view"},
		{"drop another view", "digest", `DROP VIEW recent`, ro + ": DROP VIEW is not allowed in write_query"},
		{"no other DDL", "recent", `DROP TABLE notes`, ro},
		{"protected view", "query_errors", `DROP VIEW query_errors`, pt},
		{"protected name", "memory_events", `CREATE VIEW memory_events AS SELECT 1`, pt},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			checkCase(t, templates.full, Write, Options{CreateView: c.view}, c.sql, c.want, "")
		})
	}
}

func TestSummary(t *testing.T) {
	cases := []struct {
		name string
		mode Mode
		sql  string
		want Summary
		pure bool
	}{
		{"select", Read, `SELECT * FROM notes`, Summary{}, false},
		{"rtree select ignores upkeep", Read, `SELECT * FROM boxes`, Summary{}, false},
		{"update", Write, `UPDATE notes SET body = 'x'`, Summary{Updates: true}, true},
		{"update firing an inserting trigger", Write, `UPDATE counters SET n = n + 1`, Summary{Updates: true}, true},
		{"upsert", Write, `INSERT INTO notes(body, tag) VALUES ('x', 'a') ON CONFLICT(tag) DO UPDATE SET body = 'y'`, Summary{Inserts: true, Updates: true}, false},
		{"insert", Write, `INSERT INTO notes(body) VALUES ('x')`, Summary{Inserts: true}, false},
		{"fts5 update", Write, `UPDATE docs SET body = 'x' WHERE rowid = 1`, Summary{Updates: true}, true},
		{"rtree insert", Write, `INSERT INTO boxes VALUES (9, 0, 1, 0, 1)`, Summary{Inserts: true}, false},
		{"create table", Write, `CREATE TABLE n(x)`, Summary{Schema: true}, false},
		{"create fts5", Write, `CREATE VIRTUAL TABLE nf USING fts5(x)`, Summary{Schema: true}, false},
		{"delete", Destructive, `DELETE FROM notes`, Summary{Deletes: true}, false},
		{"drop table", Destructive, `DROP TABLE notes`, Summary{Deletes: true, Schema: true}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out := run(t, templates.full, c.mode, Options{}, c.sql)
			if out.err != nil || out.violation != nil {
				t.Fatalf("error %v, violation %v", out.err, out.violation)
			}
			if out.summary != c.want || out.summary.PureUpdate() != c.pure {
				t.Fatalf("Summary() = %+v (PureUpdate %v), want %+v (PureUpdate %v)", out.summary, out.summary.PureUpdate(), c.want, c.pure)
			}
			if out.summary.Writes() != (c.want != Summary{}) {
				t.Fatalf("Writes() = %v for %+v", out.summary.Writes(), out.summary)
			}
		})
	}
}

// TestAuthorizeDirect exercises the callback without SQLite: first refusal
// wins, Reset clears, trigger context, Select-mode codes, NULL and empty
// PRAGMA values, virtual tables' own statements, insert targets.
func TestAuthorizeDirect(t *testing.T) {
	a := New(Write, Options{})
	if got := a.Authorize(Call{Action: ActionInsert, Arg1: "notes", DB: "main", Arg2Null: true}); got != OK {
		t.Fatalf("INSERT = %d, want OK", got)
	}
	if got := a.Authorize(Call{Action: ActionDelete, Arg1: "notes", DB: "main", Trigger: "tr", Arg2Null: true}); got != Deny {
		t.Fatalf("DELETE in trigger = %d, want Deny", got)
	}
	a.Authorize(Call{Action: ActionAttach, Arg1: "x.db"})
	v := a.Violation()
	if v == nil || v.Code != errcode.ReadOnly || !strings.Contains(v.Message, "DELETE (in trigger tr)") {
		t.Fatalf("first violation = %v, want the DELETE", v)
	}
	if s := a.Summary(); !s.Inserts || s.Deletes {
		t.Fatalf("Summary = %+v", s)
	}
	a.Reset()
	if a.Violation() != nil || a.Summary() != (Summary{}) || len(a.InsertTargets()) != 0 {
		t.Fatal("Reset kept state")
	}
	if got := a.Authorize(Call{Action: 99}); got != Deny || a.Violation().Code != errcode.Policy {
		t.Fatalf("unknown action = %d, %v", got, a.Violation())
	}

	// PRAGMA x reports a NULL value, PRAGMA x = '' an empty one.
	p := New(Read, Options{})
	if got := p.Authorize(Call{Action: ActionPragma, Arg1: "user_version", Arg2Null: true}); got != OK {
		t.Fatalf("PRAGMA user_version = %d, %v", got, p.Violation())
	}
	if got := p.Authorize(Call{Action: ActionPragma, Arg1: "query_only"}); got != Deny || p.Violation().Code != errcode.Policy ||
		!strings.Contains(p.Violation().Message, "PRAGMA query_only = '' is not allowed in any tool") {
		t.Fatalf("PRAGMA query_only = '' = %d, %v", got, p.Violation())
	}
	p.Reset()
	if got := p.Authorize(Call{Action: ActionPragma, Arg1: "table_info", Arg2: "notes"}); got != OK {
		t.Fatalf("PRAGMA table_info(notes) = %d, %v", got, p.Violation())
	}

	// A virtual table's own statements may prepare writes to its shadow
	// tables in any mode; the agent's statement may not write them in read
	// mode, and nothing nested may write anything else.
	for _, m := range []Mode{Select, Read} {
		n := New(m, Options{})
		n.Authorize(Call{Action: ActionSelect, Arg2Null: true})
		for _, c := range []Call{
			{Action: ActionInsert, Arg1: "rt_node", DB: "main", Arg2Null: true, Nested: true},
			{Action: ActionDelete, Arg1: "rt_parent", DB: "main", Arg2Null: true, Nested: true},
			{Action: ActionRead, Arg1: "sqlite_stat1", Arg2: "stat", DB: "main", Nested: true},
			{Action: ActionPragma, Arg1: "page_size", Arg2Null: true, Nested: true},
		} {
			if got := n.Authorize(c); got != OK {
				t.Fatalf("%v: nested %+v = %d, %v", m, c, got, n.Violation())
			}
		}
		if s := n.Summary(); s.Writes() || len(n.InsertTargets()) != 0 {
			t.Fatalf("%v: nested actions changed the summary: %+v %v", m, s, n.InsertTargets())
		}
		for _, c := range []Call{
			{Action: ActionInsert, Arg1: "rt_node", DB: "main", Arg2Null: true},
			{Action: ActionDelete, Arg1: "notes", DB: "main", Arg2Null: true, Nested: true},
			{Action: ActionInsert, Arg1: "memory_events", DB: "main", Arg2Null: true, Nested: true},
			{Action: ActionInsert, Arg1: "x_node", DB: "temp", Arg2Null: true, Nested: true},
			{Action: ActionAttach, Arg1: "x.db", Nested: true},
			{Action: ActionPragma, Arg1: "journal_mode", Arg2: "", Nested: true},
		} {
			n.Reset()
			if got := n.Authorize(c); got != Deny {
				t.Fatalf("%v: %+v allowed", m, c)
			}
		}
	}

	// Names compare as SQLite compares them: ASCII case only. U+017F and
	// the Kelvin sign fold to s and k in Go's EqualFold, not in SQLite.
	w := New(Write, Options{ShadowTables: map[string]bool{"kv_data": true}})
	if got := w.Authorize(Call{Action: ActionCreateTable, Arg1: "memory_event\u017f", DB: "main", Arg2Null: true}); got != OK {
		t.Fatalf("CREATE TABLE memory_event\u017f = %d, %v", got, w.Violation())
	}
	if got := w.Authorize(Call{Action: ActionDelete, Arg1: "\u212av_data", DB: "main", Arg2Null: true}); got != Deny {
		t.Fatal("DELETE from a table named like a shadow table but for a Kelvin sign was allowed")
	}
	w.Reset()
	w.Authorize(Call{Action: ActionInsert, Arg1: "Docs", DB: "main", Arg2Null: true})
	w.Authorize(Call{Action: ActionInsert, Arg1: "docs", DB: "main", Trigger: "tr", Arg2Null: true})
	w.Authorize(Call{Action: ActionInsert, Arg1: "audit", DB: "main", Trigger: "tr", Arg2Null: true})
	if got := w.InsertTargets(); strings.Join(got, ",") != "Docs,audit" && strings.Join(got, ",") != "audit,docs" {
		t.Fatalf("InsertTargets = %v", got)
	}

	s := New(Select, Options{})
	s.Authorize(Call{Action: ActionAttach})
	if v := s.Violation(); v == nil || v.Code != errcode.ReadOnly {
		t.Fatalf("Select mode policy refusal = %v, want READ_ONLY_VIOLATION", v)
	}
	s = New(Select, Options{})
	s.Authorize(Call{Action: ActionInsert, Arg1: "memory_events", DB: "main", Arg2Null: true})
	if v := s.Violation(); v == nil || v.Code != errcode.ReadOnly {
		t.Fatalf("Select mode protected refusal = %v, want READ_ONLY_VIOLATION", v)
	}
}

func TestNames(t *testing.T) {
	cases := []struct {
		a, b string
		same bool
	}{
		{"memory_events", "MEMORY_EVENTS", true},
		{"Memory_Events", "memory_events", true},
		{"memory_event\u017f", "memory_events", false}, // U+017F LATIN SMALL LETTER LONG S
		{"\u212aV", "kv", false},                       // U+212A KELVIN SIGN
		{"\u00c9t\u00e9", "\u00e9t\u00e9", false},      // SQLite folds ASCII only
		{"", "", true},
		{"a", "ab", false},
	}
	for _, c := range cases {
		if got := rawsqlite.SameName(c.a, c.b); got != c.same {
			t.Errorf("rawsqlite.SameName(%q, %q) = %v", c.a, c.b, got)
		}
	}
	if got := rawsqlite.FoldName("Memory_\u00c9VENTS\u017f"); got != "memory_\u00c9vents\u017f" {
		t.Errorf("FoldName = %q", got)
	}
}

func TestModes(t *testing.T) {
	tools := map[Mode]string{Select: "query_database", Read: "read_query", Write: "write_query", Destructive: "destructive_query"}
	for m, tool := range tools {
		got, err := ParseMode(m.String())
		if err != nil || got != m {
			t.Errorf("ParseMode(%q) = %v, %v", m.String(), got, err)
		}
		if m.Tool() != tool {
			t.Errorf("%v.Tool() = %q, want %q", m, m.Tool(), tool)
		}
	}
	if _, err := ParseMode("Write"); err == nil {
		t.Error("ParseMode accepted a wrong case")
	}
	if s := Mode(9).String(); s != "Mode(9)" {
		t.Errorf("Mode(9).String() = %q", s)
	}
}

func TestIsProtected(t *testing.T) {
	for _, n := range []string{"memory_events", "MEMORY_EVENTS", "Memory_Checkpoints", "query_log", "query_errors",
		"memory_events_fts", "Memory_Events_FTS_data", "memory_events_fts_idx", "memory_events_fts_docsize", "memory_events_fts_config",
		"memory_checkpoints_fts", "memory_checkpoints_fts_data"} {
		if !IsProtected(n) {
			t.Errorf("IsProtected(%q) = false", n)
		}
	}
	for _, n := range []string{"", "memory", "memory_events2", "notes", "query_logs", "memory_event\u017f", "query_lo\u0261",
		"memory_events_fts2", "memory_events_fts_", "memory_events_fts_other", "my_memory_events_fts"} {
		if IsProtected(n) {
			t.Errorf("IsProtected(%q) = true", n)
		}
	}
}

func TestViolationError(t *testing.T) {
	var err error = &errcode.Error{Code: errcode.Policy, Message: "ATTACH is not allowed in any tool"}
	if err.Error() != "POLICY_VIOLATION: ATTACH is not allowed in any tool" {
		t.Fatalf("Error() = %q", err.Error())
	}
	var v *errcode.Error
	if !errors.As(err, &v) || v.Code != errcode.Policy {
		t.Fatal("errors.As failed")
	}
}
