package eval

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/eval/sampledb"
)

// shopPath is a sample database shared by the tests (written in TestMain).
var shopPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "eval-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	shopPath = filepath.Join(dir, "shop.db")
	if err := sampledb.Write(context.Background(), shopPath); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// fakeServer plays the read-only profile's three tools (SPEC 6) directly on
// SQLite, so the scripted solver can be tested without the real server. Its
// write check is a keyword test, good enough for a fake only.
type fakeServer struct {
	db *sql.DB

	mu    sync.Mutex
	calls []string // "tool args-json"
}

func newFakeServer(t *testing.T, path string) *fakeServer {
	t.Helper()
	db, err := sql.Open("sqlite", fileURI(path, "mode=ro"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &fakeServer{db: db}
}

func (f *fakeServer) callLog() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func toolErr(code, msg string) (string, bool, error) {
	b, _ := json.Marshal(map[string]any{"error": map[string]string{"code": code, "message": msg}})
	return string(b), true, nil
}

func jsonResult(v any) (string, bool, error) {
	b, err := json.Marshal(v)
	return string(b), false, err
}

func (f *fakeServer) CallTool(ctx context.Context, name string, args map[string]any) (string, bool, error) {
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
			return toolErr("TABLE_NOT_FOUND", fmt.Sprintf("Table %q does not exist.", table))
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
			return toolErr("READ_ONLY_VIOLATION", "only SELECT is allowed")
		}
		rs, err := f.db.QueryContext(ctx, q)
		if err != nil {
			return toolErr("SQL_ERROR", err.Error())
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
	return toolErr("INVALID_ARGUMENT", "unknown tool "+name)
}
