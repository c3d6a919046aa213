// Package evaltest holds what the tests of package eval and its agent
// share: a fake of the readonly server's tools on a SQLite file. Only
// tests import it.
package evaltest

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Server plays the read-only profile's three tools (SPEC 6) directly on
// SQLite, so that the scripted solver and the agent can be tested without
// the real server. Its write check is a keyword test, good enough for a
// fake only.
type Server struct {
	db *sql.DB

	mu    sync.Mutex
	calls []string // "tool args-json"
}

// NewServer opens the database at path read-only for the test's length.
func NewServer(t testing.TB, path string) *Server {
	t.Helper()
	db, err := sql.Open("sqlite", fileURI(path, "mode=ro"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &Server{db: db}
}

// CallLog is every call so far, as "tool args-json".
func (f *Server) CallLog() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// ToolError is a tool's error result as the server writes it.
func ToolError(code, msg string) (string, bool, error) {
	b, _ := json.Marshal(map[string]any{"error": map[string]string{"code": code, "message": msg}})
	return string(b), true, nil
}

func jsonResult(v any) (string, bool, error) {
	b, err := json.Marshal(v)
	return string(b), false, err
}

// CallTool runs one tool call (eval.ToolCaller).
func (f *Server) CallTool(ctx context.Context, name string, args map[string]any) (string, bool, error) {
	b, _ := json.Marshal(args)
	f.mu.Lock()
	f.calls = append(f.calls, name+" "+string(b))
	f.mu.Unlock()
	switch name {
	case "list_tables":
		rows, err := queryAll(ctx, f.db, "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite%' ORDER BY name")
		if err != nil {
			return "", false, err
		}
		tables := []map[string]any{}
		for _, r := range rows {
			tables = append(tables, map[string]any{"name": r[0]})
		}
		return jsonResult(map[string]any{"tables": tables})
	case "describe_table":
		table, _ := args["table"].(string)
		cols, err := queryAll(ctx, f.db, "SELECT name, type, \"notnull\", pk FROM pragma_table_info(?)", table)
		if err != nil {
			return "", false, err
		}
		if len(cols) == 0 {
			return ToolError("TABLE_NOT_FOUND", fmt.Sprintf("Table %q does not exist.", table))
		}
		fks, err := queryAll(ctx, f.db, "SELECT \"from\", \"table\", \"to\" FROM pragma_foreign_key_list(?)", table)
		if err != nil {
			return "", false, err
		}
		out := map[string]any{"table": table, "columns": []any{}, "foreignKeys": []any{}}
		for _, c := range cols {
			pk := c[3].(int64) > 0
			out["columns"] = append(out["columns"].([]any), map[string]any{
				"name": c[0], "type": c[1], "nullable": c[2].(int64) == 0 && !pk, "primaryKey": pk,
			})
		}
		for _, k := range fks {
			out["foreignKeys"] = append(out["foreignKeys"].([]any), map[string]any{
				"column": k[0], "referencesTable": k[1], "referencesColumn": k[2],
			})
		}
		return jsonResult(out)
	case "query_database":
		q, _ := args["sql"].(string)
		limit, offset := 100, 0
		if v, ok := args["limit"].(float64); ok {
			limit = int(v)
		}
		if v, ok := args["offset"].(int); ok {
			offset = v
		}
		head := strings.ToUpper(strings.TrimSpace(q))
		if !strings.HasPrefix(head, "SELECT") && !strings.HasPrefix(head, "WITH") {
			return ToolError("READ_ONLY_VIOLATION", "only SELECT is allowed")
		}
		rs, err := f.db.QueryContext(ctx, q)
		if err != nil {
			return ToolError("SQL_ERROR", err.Error())
		}
		defer rs.Close()
		columns, _ := rs.Columns()
		rows := [][]any{}
		n, hasMore := 0, false
		for rs.Next() {
			vals := make([]any, len(columns))
			ptrs := make([]any, len(columns))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rs.Scan(ptrs...); err != nil {
				return "", false, err
			}
			n++
			if n <= offset {
				continue
			}
			if len(rows) == limit {
				hasMore = true
				break
			}
			rows = append(rows, vals)
		}
		return jsonResult(map[string]any{
			"columns": columns, "rows": rows, "returnedRows": len(rows),
			"limit": limit, "offset": offset, "hasMore": hasMore,
		})
	}
	return ToolError("INVALID_ARGUMENT", "unknown tool "+name)
}

// queryAll returns every row of q, text as strings.
func queryAll(ctx context.Context, db *sql.DB, q string, args ...any) ([][]any, error) {
	rs, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	cols, err := rs.Columns()
	if err != nil {
		return nil, err
	}
	var out [][]any
	for rs.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rs.Scan(ptrs...); err != nil {
			return nil, err
		}
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				vals[i] = string(b)
			}
		}
		out = append(out, vals)
	}
	return out, rs.Err()
}

// fileURI makes a SQLite URI for path, escaping the characters that would
// otherwise end the path ('?', '#') or start an escape ('%').
func fileURI(path, params string) string {
	p := filepath.ToSlash(path)
	p = strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(p)
	return "file:" + p + "?" + params
}
