package audit

import (
	"database/sql/driver"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/memory"
)

// ClusterInsert is the query_log INSERT of one tool call as a statement
// of a cluster request (SPEC 13): the row the queue writes for e (ts as
// memory.TimeLayout, a zero TS is now; detail as DetailJSON; "" error and
// empty detail stored as NULL), with every value an argument, so every
// node stores the same row. It goes in the same rqlite request as the
// write it describes, after it, so a row never precedes its write and is
// lost only with it. Bound e first (Entry.Bound), as the server does
// before Audit.
func ClusterInsert(e Entry) memory.Stmt {
	r := newRow(e, time.Now)
	return memory.Stmt{SQL: insertAudit, Args: []any{r.ts, r.session, r.tool, plain(r.query), int64(r.ok), plain(r.rows), plain(r.errText), r.durationMS, plain(r.detail)}}
}

// plain is a nullable column's value as a plan argument: nil, string or
// int64, which JSON carries to rqlite as they are (a sql.NullString would
// arrive as an object).
func plain(v driver.Valuer) any {
	x, _ := v.Value() // the Null types' Value never fails
	return x
}

// insertAuditCounting is insertAudit with rows = changes(): the count of
// the statement just before it in the request, the same on every node.
const insertAuditCounting = `INSERT INTO query_log (ts, session, tool, query, ok, rows, error, duration_ms, detail) VALUES (?, ?, ?, ?, ?, changes(), ?, ?, ?)`

// ClusterInsertCounting is ClusterInsert for the audit row of an agent's
// write, put right after it: its rows column is the write's changes(),
// which the front learns only from the cluster's answer.
func ClusterInsertCounting(e Entry) memory.Stmt {
	st := ClusterInsert(e)
	args := append(append([]any{}, st.Args[:5]...), st.Args[6:]...)
	return memory.Stmt{SQL: insertAuditCounting, Args: args}
}
