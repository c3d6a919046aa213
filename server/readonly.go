package server

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/audit"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
)

// Readonly profile limits (SPEC 6).
const (
	readonlyDefaultLimit = 100
	readonlyMaxLimit     = 500
)

// openReadonly checks the database without writing anything to it and sets
// up the audit sinks: hclog always, a separate SQLite file if asked.
func (s *Server) openReadonly(ctx context.Context) error {
	fi, err := os.Stat(s.dbPath)
	if err != nil {
		return fmt.Errorf("database %s not found; the readonly profile never creates one (write the sample with: mcp-sqlite-memory sample-db %s)", s.dbPath, s.cfg.DB)
	}
	if fi.IsDir() {
		return fmt.Errorf("%s is a folder; point --db at a SQLite file", s.dbPath)
	}
	auditors := []audit.Auditor{audit.NewLog(s.log.Named("audit"))}
	if s.cfg.AuditDB != "" {
		a, err := audit.Open(ctx, s.cfg.AuditDB, s.log.Named("audit"))
		if err != nil {
			return fmt.Errorf("open --audit-db %s: %w", s.cfg.AuditDB, err)
		}
		s.closers = append(s.closers, a)
		auditors = append(auditors, a)
	}
	s.auditor = audit.Multi(auditors...)
	return nil
}

// Output schemas of the readonly tools, for hosts that read structured
// content.
var (
	listTablesSchema = json.RawMessage(`{"type":"object","properties":{"tables":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}},"required":["tables"]}`)
	describeSchema   = json.RawMessage(`{"type":"object","properties":{"table":{"type":"string"},"columns":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"type":{"type":"string"},"nullable":{"type":"boolean"},"primaryKey":{"type":"boolean"}},"required":["name","type","nullable","primaryKey"]}},"foreignKeys":{"type":"array","items":{"type":"object","properties":{"column":{"type":"string"},"referencesTable":{"type":"string"},"referencesColumn":{"type":"string"}},"required":["column","referencesTable","referencesColumn"]}}},"required":["table","columns","foreignKeys"]}`)
	querySchema      = json.RawMessage(`{"type":"object","properties":{"columns":{"type":"array","items":{"type":"string"}},"rows":{"type":"array","items":{"type":"array"}},"returnedRows":{"type":"integer"},"limit":{"type":"integer"},"offset":{"type":"integer"},"hasMore":{"type":"boolean"}},"required":["columns","rows","returnedRows","limit","offset","hasMore"]}`)
)

func (s *Server) registerReadonly() { s.register(s.readonlyTools(), true) }

// readonlyTools declares the readonly profile's tools.
func (s *Server) readonlyTools() []tool {
	return []tool{
		{name: "list_tables", worker: true, title: "List tables", hints: readsOnly, params: noParams, output: listTablesSchema, fn: s.roListTables,
			desc: `List the database's tables as JSON {"tables":[{"name":...}]}. Start here.`},
		{name: "describe_table", worker: true, title: "Describe a table", hints: readsOnly, params: s.describeTableParams(), output: describeSchema, fn: s.describeTable,
			desc: `Columns (name, type, nullable, primaryKey) and foreign keys (column, referencesTable, referencesColumn) of one table, as JSON, read live from SQLite.`},
		{name: "query_database", worker: true, title: "Query the database (SELECT)", hints: readsOnly, params: roQueryParams, output: querySchema, fn: s.roQuery,
			desc: fmt.Sprintf(`Run ONE SELECT (or WITH ... SELECT) and get JSON {"columns","rows","returnedRows","limit","offset","hasMore"}; rows are arrays in column order. limit defaults to %d (max %d); when hasMore is true, call again with offset = offset + returnedRows. Use a stable ORDER BY when paging. Anything but SELECT is refused.`, readonlyDefaultLimit, readonlyMaxLimit)},
	}
}

var roQueryParams = params{
	{name: "sql", kind: text, required: true, query: true, desc: "one SELECT or WITH ... SELECT statement"},
	{name: "limit", kind: integer, min: 1, max: readonlyMaxLimit, def: readonlyDefaultLimit, hint: "page with offset for more rows", desc: "rows per page"},
	{name: "offset", kind: integer, min: 0, max: maxOffset, def: 0, desc: "rows to skip"},
}

func (s *Server) roListTables(_ context.Context, c *call, a args) (outcome, error) {
	if _, err := noParams.parse(a, c); err != nil {
		return outcome{}, err
	}
	req := s.request(ipc.OpListTables, ipc.ModeSelect)
	req.Table = &ipc.Table{JSON: true}
	return s.answer(c, req)
}

func (s *Server) roQuery(_ context.Context, c *call, a args) (outcome, error) {
	v, err := roQueryParams.parse(a, c)
	if err != nil {
		return outcome{}, err
	}
	limit, offset := v.int("limit"), v.int("offset")
	c.detail["limit"], c.detail["offset"] = limit, offset
	req := s.request(ipc.OpQuery, ipc.ModeSelect)
	req.SQL, req.Limit, req.Offset, req.Format = v.str("sql"), limit, offset, "json"
	// The byte cap still applies; when it stops a page early, hasMore is
	// set, so offset + returnedRows resumes at the right row.
	req.Caps.MaxRows = readonlyMaxLimit
	return s.answer(c, req)
}
