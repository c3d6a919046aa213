package tests

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/eval/sampledb"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
)

// The sample shop database, written once per test run and copied.
var (
	shopOnce     sync.Once
	shopTemplate []byte
	shopErr      error
)

// shopDB puts the sample shop database alone in a fresh folder, so that
// any file a call creates beside it shows up in fileState.
func shopDB(t *testing.T) string {
	t.Helper()
	shopOnce.Do(func() {
		tmpl := filepath.Join(filepath.Dir(serverBin), "shop-template.db")
		if shopErr = sampledb.Write(context.Background(), tmpl); shopErr == nil {
			shopTemplate, shopErr = os.ReadFile(tmpl)
		}
	})
	if shopErr != nil {
		t.Fatal(shopErr)
	}
	path := filepath.Join(testDir(t), "shop.db")
	if err := os.WriteFile(path, shopTemplate, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// startRO starts the server in the readonly profile on db.
func startRO(t *testing.T, db string, flags ...string) *session {
	t.Helper()
	return start(t, db, append([]string{"--profile", "readonly"}, flags...)...)
}

// fileState is the sha256 of the database file plus the names in its
// folder: a refused statement must leave both as they were (no -journal,
// -wal, copy or attached file either).
func fileState(t *testing.T, db string) string {
	t.Helper()
	b, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	entries, err := os.ReadDir(filepath.Dir(db))
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return hex.EncodeToString(sum[:]) + " " + strings.Join(names, ",")
}

// roError is the readonly profile's error object.
type roError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// roFails calls a tool that must fail with code and returns the decoded
// error. The text must be exactly {"error":{"code","message"}}.
func (s *session) roFails(tool string, args map[string]any, code string) roError {
	s.t.Helper()
	text, isErr := s.call(tool, args)
	var v struct {
		Error *roError `json:"error"`
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	if !isErr || dec.Decode(&v) != nil || v.Error == nil || v.Error.Message == "" {
		s.t.Fatalf("%s %v: got (error=%v) %q, want a JSON error object", tool, args, isErr, text)
	}
	if v.Error.Code != code {
		s.t.Fatalf("%s %v: got %s: %s, want code %s", tool, args, v.Error.Code, v.Error.Message, code)
	}
	return *v.Error
}

// roOK calls a tool that must succeed, checks that the structured content is
// the same document as the text, decodes the text into out and returns it.
func (s *session) roOK(tool string, args map[string]any, out any) string {
	s.t.Helper()
	res := s.callResult(tool, args)
	var parts []string
	for _, c := range res.Content {
		if tc, ok := mcp.AsTextContent(c); ok {
			parts = append(parts, tc.Text)
		}
	}
	text := strings.Join(parts, "\n")
	if res.IsError {
		s.t.Fatalf("%s %v: unexpected error: %s", tool, args, text)
	}
	var fromText, fromStructured any
	if err := json.Unmarshal([]byte(text), &fromText); err != nil {
		s.t.Fatalf("%s: text is not JSON: %v: %q", tool, err, text)
	}
	if err := json.Unmarshal(res.RawStructuredContent, &fromStructured); err != nil {
		s.t.Fatalf("%s: structured content: %v (%q)", tool, err, res.RawStructuredContent)
	}
	if !reflect.DeepEqual(fromText, fromStructured) {
		s.t.Fatalf("%s: structured content differs from the text:\n%s\n%s", tool, res.RawStructuredContent, text)
	}
	if out != nil {
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(out); err != nil {
			s.t.Fatalf("%s: %v: %s", tool, err, text)
		}
	}
	return text
}

// page is query_database's result.
type page struct {
	Columns      []string `json:"columns"`
	Rows         [][]any  `json:"rows"`
	ReturnedRows int      `json:"returnedRows"`
	Limit        int      `json:"limit"`
	Offset       int      `json:"offset"`
	HasMore      bool     `json:"hasMore"`
}

func (s *session) query(sql string, limitOffset ...int) page {
	s.t.Helper()
	args := map[string]any{"sql": sql}
	if len(limitOffset) > 0 {
		args["limit"] = limitOffset[0]
	}
	if len(limitOffset) > 1 {
		args["offset"] = limitOffset[1]
	}
	var p page
	s.roOK("query_database", args, &p)
	if p.ReturnedRows != len(p.Rows) {
		s.t.Fatalf("returnedRows %d for %d rows", p.ReturnedRows, len(p.Rows))
	}
	return p
}

func TestReadonlyTools(t *testing.T) {
	t.Parallel()
	s := startRO(t, shopDB(t))
	res, err := s.c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	wantOutput := map[string][]string{ // tool -> required keys of its output schema
		"list_tables":    {"tables"},
		"describe_table": {"table", "columns", "foreignKeys"},
		"query_database": {"columns", "rows", "returnedRows", "limit", "offset", "hasMore"},
	}
	wantInput := map[string][]string{ // tool -> input properties
		"list_tables":    {},
		"describe_table": {"table"},
		"query_database": {"sql", "limit", "offset"},
	}
	if len(res.Tools) != 3 {
		t.Fatalf("got %d tools, want exactly 3", len(res.Tools))
	}
	for _, tool := range res.Tools {
		keys, ok := wantOutput[tool.Name]
		if !ok {
			t.Errorf("unexpected tool %s", tool.Name)
			continue
		}
		a := tool.Annotations
		if a.ReadOnlyHint == nil || !*a.ReadOnlyHint || a.DestructiveHint == nil || *a.DestructiveHint ||
			a.IdempotentHint == nil || !*a.IdempotentHint || a.OpenWorldHint == nil || *a.OpenWorldHint {
			t.Errorf("%s: annotations %+v, want read-only, not destructive, idempotent, closed world", tool.Name, a)
		}
		out := tool.OutputSchema
		if out.Type != "object" || !slices.Equal(out.Required, keys) || len(out.Properties) != len(keys) {
			t.Errorf("%s: output schema %+v, want an object requiring %v", tool.Name, out, keys)
		}
		var props []string
		for p := range tool.InputSchema.Properties {
			props = append(props, p)
		}
		slices.Sort(props)
		want := slices.Sorted(slices.Values(wantInput[tool.Name]))
		if !slices.Equal(props, want) {
			t.Errorf("%s: input properties %v, want %v", tool.Name, props, want)
		}
		if len(tool.Description) < 60 {
			t.Errorf("%s: description too thin for an agent: %q", tool.Name, tool.Description)
		}
	}
}

func TestReadonlyListAndDescribe(t *testing.T) {
	t.Parallel()
	db := shopDB(t)
	before := fileState(t, db)
	s := startRO(t, db)

	text := s.roOK("list_tables", nil, nil)
	if want := `{"tables":[{"name":"customers"},{"name":"products"},{"name":"orders"},{"name":"order_items"}]}`; text != want {
		t.Fatalf("list_tables:\n%s\nwant:\n%s", text, want)
	}

	type column struct {
		Name       string `json:"name"`
		Type       string `json:"type"`
		Nullable   bool   `json:"nullable"`
		PrimaryKey bool   `json:"primaryKey"`
	}
	type foreignKey struct {
		Column           string `json:"column"`
		ReferencesTable  string `json:"referencesTable"`
		ReferencesColumn string `json:"referencesColumn"`
	}
	type table struct {
		Table       string       `json:"table"`
		Columns     []column     `json:"columns"`
		ForeignKeys []foreignKey `json:"foreignKeys"`
	}
	var got table
	s.roOK("describe_table", map[string]any{"table": "order_items"}, &got)
	// SPEC 6 sets no order for foreign keys (SQLite lists them last first).
	slices.SortFunc(got.ForeignKeys, func(a, b foreignKey) int { return strings.Compare(a.Column, b.Column) })
	want := table{
		Table: "order_items",
		Columns: []column{
			{"id", "INTEGER", false, true},
			{"order_id", "INTEGER", false, false},
			{"product_id", "INTEGER", false, false},
			{"quantity", "INTEGER", false, false},
			{"unit_price", "REAL", false, false},
		},
		ForeignKeys: []foreignKey{{"order_id", "orders", "id"}, {"product_id", "products", "id"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("describe_table order_items:\n%+v\nwant:\n%+v", got, want)
	}
	got = table{}
	s.roOK("describe_table", map[string]any{"table": "customers"}, &got)
	if len(got.Columns) != 6 || got.Columns[0] != (column{"id", "INTEGER", false, true}) || got.ForeignKeys == nil || len(got.ForeignKeys) != 0 {
		t.Fatalf("describe_table customers: %+v (foreignKeys must be [], not null)", got)
	}

	text, isErr := s.call("describe_table", map[string]any{"table": "foo"})
	if want := `{"error":{"code":"TABLE_NOT_FOUND","message":"Table \"foo\" does not exist."}}`; !isErr || text != want {
		t.Fatalf("unknown table: (error=%v) %s, want %s", isErr, text, want)
	}
	// The server's catalogue is not a user table.
	s.roFails("describe_table", map[string]any{"table": "sqlite_schema"}, "TABLE_NOT_FOUND")
	if after := fileState(t, db); after != before {
		t.Fatalf("the database or its folder changed: %s -> %s", before, after)
	}
}

// TestReadonlyDescribeEdgeCases covers the key and foreign key rules on a
// database made for them.
func TestReadonlyDescribeEdgeCases(t *testing.T) {
	t.Parallel()
	db := filepath.Join(testDir(t), "edge.db")
	direct := openDirect(t, db)
	for _, stmt := range []string{
		`CREATE TABLE parent (id INTEGER PRIMARY KEY, name TEXT)`,
		// A REFERENCES clause without a column points at the primary key;
		// a lower-case "integer primary key" is still the rowid.
		`CREATE TABLE child (cid integer primary key, parent_id INTEGER REFERENCES parent, note VARCHAR(20) NOT NULL)`,
		// Only INTEGER PRIMARY KEY is the rowid: these keys may hold NULL.
		`CREATE TABLE kv (k TEXT PRIMARY KEY, v)`,
		`CREATE TABLE ik (n INT PRIMARY KEY)`,
		`CREATE TABLE wr (a TEXT, b INT, c, PRIMARY KEY (a, b)) WITHOUT ROWID`,
		`CREATE TABLE "odd ""name""" (x INTEGER PRIMARY KEY AUTOINCREMENT)`,
		`INSERT INTO "odd ""name""" DEFAULT VALUES`,
		`CREATE VIEW v AS SELECT * FROM parent`,
		`ANALYZE`,
	} {
		if _, err := direct.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	direct.Close()
	s := startRO(t, db)

	var tables struct {
		Tables []struct {
			Name string `json:"name"`
		} `json:"tables"`
	}
	s.roOK("list_tables", nil, &tables)
	var names []string
	for _, tb := range tables.Tables {
		names = append(names, tb.Name)
	}
	// sqlite_sequence and sqlite_stat1 exist but are hidden; views are not tables.
	if want := []string{"parent", "child", "kv", "ik", "wr", `odd "name"`}; !slices.Equal(names, want) {
		t.Fatalf("list_tables %q, want %q", names, want)
	}

	tests := []struct {
		table, want string
	}{
		{"child", `{"table":"child","columns":[{"name":"cid","type":"INTEGER","nullable":false,"primaryKey":true},{"name":"parent_id","type":"INTEGER","nullable":true,"primaryKey":false},{"name":"note","type":"VARCHAR(20)","nullable":false,"primaryKey":false}],"foreignKeys":[{"column":"parent_id","referencesTable":"parent","referencesColumn":"id"}]}`},
		{"kv", `{"table":"kv","columns":[{"name":"k","type":"TEXT","nullable":true,"primaryKey":true},{"name":"v","type":"","nullable":true,"primaryKey":false}],"foreignKeys":[]}`},
		{"ik", `{"table":"ik","columns":[{"name":"n","type":"INT","nullable":true,"primaryKey":true}],"foreignKeys":[]}`},
		{"wr", `{"table":"wr","columns":[{"name":"a","type":"TEXT","nullable":false,"primaryKey":true},{"name":"b","type":"INT","nullable":false,"primaryKey":true},{"name":"c","type":"","nullable":true,"primaryKey":false}],"foreignKeys":[]}`},
		{`odd "name"`, `{"table":"odd \"name\"","columns":[{"name":"x","type":"INTEGER","nullable":false,"primaryKey":true}],"foreignKeys":[]}`},
		{"CHILD", `{"table":"child",`}, // names resolve case-insensitively, as in SQL
	}
	for _, tt := range tests {
		t.Run(tt.table, func(t *testing.T) {
			got := s.roOK("describe_table", map[string]any{"table": tt.table}, nil)
			if !strings.HasPrefix(got, tt.want) {
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestReadonlyRefusals sends every kind of statement that is not a plain
// SELECT and checks the error object and that neither the file nor its
// folder changed.
func TestReadonlyRefusals(t *testing.T) {
	t.Parallel()
	db := shopDB(t)
	s := startRO(t, db)
	const ro, multi = "READ_ONLY_VIOLATION", "MULTIPLE_STATEMENTS"
	tests := []struct {
		name, sql, code string
	}{
		{"insert", "INSERT INTO products (name, category, price) VALUES ('x', 'y', 1)", ro},
		{"insert select", "INSERT INTO products (name, category, price) SELECT name || '2', category, price FROM products", ro},
		{"replace", "REPLACE INTO products (id, name, category, price) VALUES (1, 'x', 'y', 1)", ro},
		{"upsert", "INSERT INTO products (id, name, category, price) VALUES (1, 'x', 'y', 1) ON CONFLICT(id) DO UPDATE SET price = 2", ro},
		{"update", "UPDATE products SET price = price * 2", ro},
		{"update returning", "UPDATE products SET price = 1 WHERE id = 1 RETURNING id", ro},
		{"delete", "DELETE FROM orders WHERE status = 'cancelled'", ro},
		{"delete disguised", "/* report */ dElEtE -- really\nFROM order_items", ro},
		{"drop table", "DROP TABLE order_items", ro},
		{"drop index", "DROP INDEX orders_order_date", ro},
		{"create table", "CREATE TABLE t (x)", ro},
		{"create table as", "CREATE TABLE t AS SELECT * FROM customers", ro},
		{"create index", "CREATE INDEX t_idx ON customers(city)", ro},
		{"create view", "CREATE VIEW v AS SELECT 1", ro},
		{"create trigger", "CREATE TRIGGER tr AFTER INSERT ON orders BEGIN SELECT 1; END", ro},
		{"create temp table", "CREATE TEMP TABLE t (x)", ro},
		{"create virtual table", "CREATE VIRTUAL TABLE f USING fts5(x)", ro},
		{"alter rename", "ALTER TABLE orders RENAME TO orders_old", ro},
		{"alter add column", "ALTER TABLE orders ADD COLUMN note TEXT", ro},
		{"attach", "ATTACH 'other.db' AS other", ro},
		{"attach memory", "ATTACH ':memory:' AS m", ro},
		{"detach", "DETACH main", ro},
		{"pragma read", "PRAGMA user_version", ro},
		{"pragma introspection", "PRAGMA table_info(orders)", ro},
		{"pragma write", "PRAGMA user_version = 7", ro},
		{"pragma journal mode", "PRAGMA journal_mode = WAL", ro},
		{"pragma writable_schema", "PRAGMA writable_schema = ON", ro},
		{"vacuum", "VACUUM", ro},
		{"vacuum into", "VACUUM INTO 'copy.db'", ro},
		{"begin", "BEGIN", ro},
		{"begin immediate", "BEGIN IMMEDIATE", ro},
		{"commit", "COMMIT", ro},
		{"rollback", "ROLLBACK", ro},
		{"savepoint", "SAVEPOINT a", ro},
		{"explain", "EXPLAIN SELECT * FROM orders", ro},
		{"explain query plan", "EXPLAIN QUERY PLAN SELECT * FROM orders", ro},
		{"explain delete", "EXPLAIN DELETE FROM orders", ro},
		{"cte delete", "WITH c AS (SELECT id FROM orders WHERE status = 'cancelled') DELETE FROM orders WHERE id IN (SELECT id FROM c)", ro},
		{"cte insert", "WITH c(x) AS (SELECT 1) INSERT INTO products (name, category, price) SELECT 'n', 'c', x FROM c", ro},
		{"cte update", "WITH c AS (SELECT 1) UPDATE orders SET status = 'paid'", ro},
		{"reindex", "REINDEX", ro},
		{"reindex table", "REINDEX orders", ro},
		{"analyze", "ANALYZE", ro},
		{"load_extension", "SELECT load_extension('/tmp/evil.so')", ro},
		{"two selects", "SELECT 1; SELECT 2", multi},
		{"select then delete", "SELECT count(*) FROM orders; DELETE FROM orders", multi},
		{"select then drop", "SELECT 1;DROP TABLE orders", multi},
		{"trailing garbage", "SELECT 1; garbage", multi},
		{"sql error", "SELECT nope FROM orders", "SQL_ERROR"},
		{"no such table", "SELECT * FROM clients", "SQL_ERROR"},
		{"syntax error", "SELEC 1", "SQL_ERROR"},
	}
	// Tools that do not exist in this profile must not be suggested.
	otherTools := []string{"read_query", "write_query", "destructive_query", "create_view"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := fileState(t, db)
			e := s.roFails("query_database", map[string]any{"sql": tt.sql}, tt.code)
			if after := fileState(t, db); after != before {
				t.Fatalf("the database or its folder changed: %s -> %s", before, after)
			}
			for _, other := range otherTools {
				if strings.Contains(e.Message, other) {
					t.Errorf("message points the agent at %s, which the readonly profile does not offer: %q", other, e.Message)
				}
			}
		})
	}
	// Nothing landed in the working folder either.
	for _, f := range []string{"other.db", "copy.db"} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("%s was created in the working folder", f)
		}
	}
	// The data itself is untouched and still served.
	if p := s.query("SELECT count(*) FROM orders WHERE status = 'cancelled'"); p.Rows[0][0] == float64(0) {
		t.Fatal("cancelled orders are gone")
	}
}

func TestReadonlyArguments(t *testing.T) {
	t.Parallel()
	db := shopDB(t)
	before := fileState(t, db)
	s := startRO(t, db)
	const bad = "INVALID_ARGUMENT"
	tests := []struct {
		name, tool string
		args       map[string]any
		msg        string
	}{
		{"limit above 500", "query_database", map[string]any{"sql": "SELECT 1", "limit": 501}, "1 to 500"},
		{"limit far above", "query_database", map[string]any{"sql": "SELECT 1", "limit": 100000}, "1 to 500"},
		{"limit 0", "query_database", map[string]any{"sql": "SELECT 1", "limit": 0}, "limit"},
		{"negative limit", "query_database", map[string]any{"sql": "SELECT 1", "limit": -5}, "limit"},
		{"fractional limit", "query_database", map[string]any{"sql": "SELECT 1", "limit": 2.5}, "limit"},
		{"limit as string", "query_database", map[string]any{"sql": "SELECT 1", "limit": "10"}, "limit"},
		{"negative offset", "query_database", map[string]any{"sql": "SELECT 1", "offset": -1}, "offset"},
		{"offset as string", "query_database", map[string]any{"sql": "SELECT 1", "offset": "1"}, "offset"},
		{"unknown argument", "query_database", map[string]any{"sql": "SELECT 1", "format": "csv"}, "format"},
		{"query instead of sql", "query_database", map[string]any{"query": "SELECT 1"}, "query"},
		{"missing sql", "query_database", map[string]any{}, "sql"},
		{"empty sql", "query_database", map[string]any{"sql": "  "}, "sql"},
		{"sql as number", "query_database", map[string]any{"sql": 1}, "sql"},
		{"only a comment", "query_database", map[string]any{"sql": "-- nothing"}, ""},
		{"missing table", "describe_table", map[string]any{}, "table"},
		{"empty table", "describe_table", map[string]any{"table": ""}, "table"},
		{"unknown describe argument", "describe_table", map[string]any{"table": "orders", "schema": "main"}, "schema"},
		{"list_tables takes none", "list_tables", map[string]any{"include_row_counts": true}, "include_row_counts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := s.roFails(tt.tool, tt.args, bad)
			if !strings.Contains(e.Message, tt.msg) {
				t.Fatalf("message %q does not mention %q", e.Message, tt.msg)
			}
		})
	}
	// The bounds themselves are fine.
	if p := s.query("SELECT id FROM customers ORDER BY id", 500); p.Limit != 500 || p.ReturnedRows != sampledb.Customers || p.HasMore {
		t.Fatalf("limit 500: %+v", p)
	}
	if p := s.query("SELECT id FROM customers ORDER BY id", 1, 0); p.ReturnedRows != 1 || !p.HasMore {
		t.Fatalf("limit 1: %+v", p)
	}
	if after := fileState(t, db); after != before {
		t.Fatalf("the database or its folder changed: %s -> %s", before, after)
	}
}

func TestReadonlyPagination(t *testing.T) {
	t.Parallel()
	db := shopDB(t)
	s := startRO(t, db)
	const all = "SELECT id, name FROM customers ORDER BY id" // 200 rows

	ids := func(p page) []int {
		var out []int
		for _, r := range p.Rows {
			out = append(out, int(r[0].(float64)))
		}
		return out
	}
	span := func(from, to int) []int {
		var out []int
		for i := from; i <= to; i++ {
			out = append(out, i)
		}
		return out
	}

	p := s.query(all) // defaults: limit 100, offset 0
	if !slices.Equal(p.Columns, []string{"id", "name"}) || p.Limit != 100 || p.Offset != 0 || p.ReturnedRows != 100 || !p.HasMore || !slices.Equal(ids(p), span(1, 100)) {
		t.Fatalf("first page: %+v", p)
	}
	p = s.query(all, 100, 100)
	if p.Offset != 100 || p.ReturnedRows != 100 || p.HasMore || !slices.Equal(ids(p), span(101, 200)) {
		t.Fatalf("second page: hasMore=%v returned=%d ids %v", p.HasMore, p.ReturnedRows, ids(p))
	}
	// limit equal to the rows left: no more; one short of it: more.
	if p = s.query(all, 200); p.HasMore || p.ReturnedRows != 200 {
		t.Fatalf("limit 200 of 200: hasMore=%v returned=%d", p.HasMore, p.ReturnedRows)
	}
	if p = s.query(all, 199); !p.HasMore || p.ReturnedRows != 199 {
		t.Fatalf("limit 199 of 200: hasMore=%v returned=%d", p.HasMore, p.ReturnedRows)
	}
	if p = s.query(all, 50, 150); p.HasMore || !slices.Equal(ids(p), span(151, 200)) {
		t.Fatalf("limit == remaining: hasMore=%v ids %v", p.HasMore, ids(p))
	}
	if p = s.query(all, 49, 150); !p.HasMore || !slices.Equal(ids(p), span(151, 199)) {
		t.Fatalf("limit == remaining-1: hasMore=%v ids %v", p.HasMore, ids(p))
	}
	if p = s.query(all, 10, 200); p.HasMore || p.Rows == nil || len(p.Rows) != 0 {
		t.Fatalf("offset at the end: %+v (rows must be [], not null)", p)
	}
	// Errorf: the walk below is independent of this check.
	if p = s.query(all, 10, 201); p.HasMore || len(p.Rows) != 0 || p.Offset != 201 {
		t.Errorf("offset one past the end: hasMore=%v ids %v, want no rows and hasMore false", p.HasMore, ids(p))
	}
	if p = s.query(all, 10, 5000); p.HasMore || len(p.Rows) != 0 || p.Offset != 5000 {
		t.Errorf("offset far past the end: hasMore=%v ids %v, want no rows and hasMore false", p.HasMore, ids(p))
	}

	// Walking wide rows with the largest page: the byte cap may end a page
	// early, and hasMore with offset+returnedRows must still cover every
	// row exactly once, in order.
	const wide = "SELECT o.id, c.name, c.email, c.city, c.country, o.order_date, o.status FROM orders o JOIN customers c ON c.id = o.customer_id ORDER BY o.id"
	var seen []int
	offset, pages := 0, 0
	for {
		p := s.query(wide, 500, offset)
		pages++
		seen = append(seen, ids(p)...)
		if !p.HasMore {
			break
		}
		if p.ReturnedRows == 0 || pages > 100 {
			t.Fatalf("no progress at offset %d: %+v", offset, p)
		}
		offset += p.ReturnedRows
	}
	if !slices.Equal(seen, span(1, sampledb.Orders)) {
		t.Fatalf("paging saw %d rows (first %v), want ids 1..%d once each", len(seen), seen[:min(5, len(seen))], sampledb.Orders)
	}
	t.Logf("%d orders in %d pages", len(seen), pages)
}

func TestReadonlyValues(t *testing.T) {
	t.Parallel()
	s := startRO(t, shopDB(t))
	text := s.roOK("query_database", map[string]any{"sql": `SELECT 7 AS i, 1.5 AS r, 2.0 AS f, NULL AS n, x'00ff' AS b, 'say "hi"' || char(10) AS s, '' AS e, 1e999 AS inf`}, nil)
	want := `{"columns":["i","r","f","n","b","s","e","inf"],"rows":[[7,1.5,2.0,null,"<blob 2 bytes>","say \"hi\"\n","","Inf"]],"returnedRows":1,"limit":100,"offset":0,"hasMore":false}`
	if text != want {
		t.Fatalf("got  %s\nwant %s", text, want)
	}
	// WITH ... SELECT and a trailing semicolon or comment are one SELECT.
	for _, sql := range []string{
		"WITH c AS (SELECT status, count(*) AS n FROM orders GROUP BY status) SELECT sum(n) FROM c",
		"SELECT count(*) FROM orders;",
		"SELECT count(*) FROM orders; -- done",
	} {
		if p := s.query(sql); len(p.Rows) != 1 || p.Rows[0][0] != float64(sampledb.Orders) {
			t.Errorf("%s: %+v", sql, p)
		}
	}
}

// TestReadonlyKeepsServing fails fifty calls in a row, of every kind, then
// expects normal service and an unchanged file.
func TestReadonlyKeepsServing(t *testing.T) {
	t.Parallel()
	db := shopDB(t)
	before := fileState(t, db)
	s := startRO(t, db)
	failures := []struct {
		tool string
		args map[string]any
		code string
	}{
		{"query_database", map[string]any{"sql": "DELETE FROM orders"}, "READ_ONLY_VIOLATION"},
		{"query_database", map[string]any{"sql": "SELECT * FROM nope"}, "SQL_ERROR"},
		{"query_database", map[string]any{"sql": "SELECT 1; DROP TABLE orders"}, "MULTIPLE_STATEMENTS"},
		{"query_database", map[string]any{"sql": "SELECT 1", "limit": 1000}, "INVALID_ARGUMENT"},
		{"describe_table", map[string]any{"table": "nope"}, "TABLE_NOT_FOUND"},
	}
	for i := range 50 {
		f := failures[i%len(failures)]
		s.roFails(f.tool, f.args, f.code)
	}
	if p := s.query("SELECT count(*) FROM order_items"); p.Rows[0][0] != float64(sampledb.OrderItems) {
		t.Fatalf("after 50 failures: %+v", p)
	}
	if after := fileState(t, db); after != before {
		t.Fatalf("the database or its folder changed: %s -> %s", before, after)
	}
}

func TestReadonlyRunawayQuery(t *testing.T) {
	// Not parallel: it bounds how soon the query is stopped, which other tests on the 2 cores would skew.
	db := shopDB(t)
	before := fileState(t, db)
	s := startRO(t, db, "--query-timeout", "1")
	for _, sql := range []string{
		"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
		"SELECT count(*) FROM order_items a, order_items b, order_items c",
	} {
		start := time.Now()
		e := s.roFails("query_database", map[string]any{"sql": sql}, "TIMEOUT")
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("%s: stopped after %s, want about 1s", sql, took)
		}
		if !strings.Contains(e.Message, "1s") {
			t.Errorf("message %q does not say the limit", e.Message)
		}
	}
	if p := s.query("SELECT count(*) FROM customers"); p.Rows[0][0] != float64(sampledb.Customers) {
		t.Fatalf("after the timeouts: %+v", p)
	}
	if after := fileState(t, db); after != before {
		t.Fatalf("the database or its folder changed: %s -> %s", before, after)
	}
}

// lockedBuffer collects a child's stderr (a server's log), written from
// another goroutine while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// cleanEnv is the test's environment without any database setting, plus
// extra.
func cleanEnv(extra ...string) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "MCP_SQLITE_") || strings.HasPrefix(kv, "DATABASE_PATH=")
	})
	return append(env, extra...)
}

// startIn starts the server with args in folder dir and environment env, as
// a host with its own working folder would, and collects its stderr.
func startIn(t *testing.T, dir string, env []string, args ...string) (*session, *lockedBuffer) {
	t.Helper()
	stderr := &lockedBuffer{}
	var cmd *exec.Cmd
	inDir := func(ctx context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
		cmd = exec.CommandContext(ctx, command, args...)
		cmd.Env, cmd.Dir, cmd.Stderr = env, dir, stderr
		return cmd, nil
	}
	c, err := client.NewStdioMCPClientWithOptions(serverBin, env, args, transport.WithCommandFunc(inDir))
	if err != nil {
		t.Fatalf("start server: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "e2e", Version: "1"}
	if _, err := c.Initialize(t.Context(), init); err != nil {
		t.Fatalf("initialize: %v\nstderr:\n%s", err, stderr)
	}
	return &session{t: t, c: c, cmd: cmd}, stderr
}

func TestReadonlyDefaultDatabase(t *testing.T) {
	t.Parallel()
	t.Run("shop.db in the working folder", func(t *testing.T) {
		db := shopDB(t)
		before := fileState(t, db)
		s, stderr := startIn(t, filepath.Dir(db), cleanEnv(), "--profile", "readonly")
		if p := s.query("SELECT count(*) FROM customers"); p.Rows[0][0] != float64(sampledb.Customers) {
			t.Fatalf("got %+v", p)
		}
		s.roFails("query_database", map[string]any{"sql": "DROP TABLE customers"}, "READ_ONLY_VIOLATION")
		// The audit trail goes to stderr, the failed call included.
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(stderr.String(), "DROP TABLE customers") && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if log := stderr.String(); !strings.Contains(log, "audit") || !strings.Contains(log, "SELECT count(*) FROM customers") || !strings.Contains(log, "DROP TABLE customers") {
			t.Errorf("stderr lacks the audit records:\n%s", log)
		}
		if after := fileState(t, db); after != before {
			t.Fatalf("the database or its folder changed: %s -> %s", before, after)
		}
	})
	t.Run("DATABASE_PATH", func(t *testing.T) {
		db := shopDB(t)
		before := fileState(t, db)
		elsewhere := testDir(t)
		s, _ := startIn(t, elsewhere, cleanEnv("DATABASE_PATH="+db), "--profile", "readonly")
		if p := s.query("SELECT count(*) FROM orders"); p.Rows[0][0] != float64(sampledb.Orders) {
			t.Fatalf("got %+v", p)
		}
		if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
			t.Errorf("files appeared in the working folder: %v", entries)
		}
		if after := fileState(t, db); after != before {
			t.Fatalf("the database or its folder changed: %s -> %s", before, after)
		}
	})
}

func TestReadonlyAuditDB(t *testing.T) {
	t.Parallel()
	db := shopDB(t)
	before := fileState(t, db)
	audit := filepath.Join(testDir(t), "audit", "audit.db")
	s := startRO(t, db, "--audit-db", audit)
	s.roOK("list_tables", nil, nil)
	s.roOK("describe_table", map[string]any{"table": "orders"}, nil)
	s.query("SELECT count(*) FROM orders")
	s.roFails("query_database", map[string]any{"sql": "DELETE FROM orders"}, "READ_ONLY_VIOLATION")
	s.roFails("query_database", map[string]any{"sql": "SELECT 1", "limit": 0}, "INVALID_ARGUMENT")

	s.audited(audit)
	all, failed := auditRows(t, audit)
	if all != 5 || failed != 2 {
		t.Fatalf("audit rows: %d (%d failed), want 5 (2 failed)", all, failed)
	}
	want := []struct {
		tool string
		ok   bool
		err  string
	}{
		{"query_database", false, "INVALID_ARGUMENT"},
		{"query_database", false, "READ_ONLY_VIOLATION"},
		{"query_database", true, ""},
		{"describe_table", true, ""},
		{"list_tables", true, ""},
	}
	for i, w := range want {
		tool, ok, errText := lastAuditN(t, audit, i+1)
		if tool != w.tool || ok != w.ok || !strings.HasPrefix(errText, w.err) {
			t.Errorf("audit row %d from the end: %s ok=%v %q, want %s ok=%v %s...", i+1, tool, ok, errText, w.tool, w.ok, w.err)
		}
	}
	var query string
	if err := openDirect(t, audit).QueryRow(`SELECT query FROM query_log WHERE ok = 0 ORDER BY id LIMIT 1`).Scan(&query); err != nil || query != "DELETE FROM orders" {
		t.Errorf("refused query logged as %q (%v)", query, err)
	}
	if after := fileState(t, db); after != before {
		t.Fatalf("the shop database or its folder changed: %s -> %s", before, after)
	}
	// The shop file got no server tables.
	var n int
	if err := openDirect(t, db).QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name IN ('query_log', 'memory_events')`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("server tables in the shop database: %d (%v)", n, err)
	}
}

func TestReadonlyMissingDatabase(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, dir string, env []string, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, serverBin, args...)
		cmd.Dir, cmd.Env = dir, env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run() // stdin is /dev/null: a server that started would exit 0
		if err == nil {
			t.Fatalf("started without a database; stderr:\n%s", stderr.String())
		}
		if ctx.Err() != nil {
			t.Fatal("the server hung instead of exiting")
		}
		return stderr.String()
	}
	t.Run("--db", func(t *testing.T) {
		dir := testDir(t)
		missing := filepath.Join(dir, "missing.db")
		msg := run(t, dir, cleanEnv(), "--profile", "readonly", "--db", missing)
		if !strings.Contains(msg, "missing.db") || !strings.Contains(msg, "not found") || !strings.Contains(msg, "sample-db") {
			t.Errorf("unclear startup error: %q", msg)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("files were created: %v", entries)
		}
	})
	t.Run("default shop.db", func(t *testing.T) {
		dir := testDir(t)
		msg := run(t, dir, cleanEnv(), "--profile", "readonly")
		if !strings.Contains(msg, "shop.db") || !strings.Contains(msg, "not found") {
			t.Errorf("unclear startup error: %q", msg)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("files were created: %v", entries)
		}
	})
}

// TestReadonlyWorkerOpenIsReadOnly bypasses the policy: it asks a worker
// directly for write or destructive mode on a file opened read-only. SQLite
// itself must refuse every write, and the file must stay byte-identical.
func TestReadonlyWorkerOpenIsReadOnly(t *testing.T) {
	t.Parallel()
	db := shopDB(t)
	before := fileState(t, db)
	runWorker := func(t *testing.T, db string, readOnlyFile bool, mode, sql string) map[string]any {
		t.Helper()
		req, err := json.Marshal(map[string]any{
			"v": ipc.Version, "op": "query", "db": db, "read_only_file": readOnlyFile, "mode": mode, "sql": sql,
			"caps":   map[string]any{"max_rows": 100, "max_result_bytes": 32768, "max_cell_chars": 2000, "max_update_rows": 100000},
			"limits": map[string]any{"timeout_ms": 10000, "memory_mb": 256, "max_growth_mb": 64, "sandbox": false},
		})
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(t.Context(), workerBin)
		cmd.Stdin = bytes.NewReader(req)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("worker: %v", err)
		}
		// The response is a JSON header line, then the raw result text.
		header, _, _ := bytes.Cut(out, []byte("\n"))
		var resp map[string]any
		if err := json.Unmarshal(header, &resp); err != nil {
			t.Fatalf("worker response %q: %v", out, err)
		}
		return resp
	}
	tests := []struct{ mode, sql string }{
		{"write", "INSERT INTO products (name, category, price) VALUES ('Sneaky', 'x', 1)"},
		{"write", "UPDATE products SET price = 0.01 WHERE id = 1"},
		{"write", "CREATE TABLE stolen (x)"},
		{"write", "CREATE INDEX customers_city ON customers(city)"},
		{"destructive", "DELETE FROM orders WHERE status = 'cancelled'"},
		{"destructive", "DROP TABLE order_items"},
		{"destructive", "ALTER TABLE orders ADD COLUMN note TEXT"},
	}
	for _, tt := range tests {
		t.Run(tt.sql, func(t *testing.T) {
			resp := runWorker(t, db, true, tt.mode, tt.sql)
			if resp["ok"] != false || resp["code"] != "READ_ONLY_VIOLATION" || !strings.Contains(fmt.Sprint(resp["message"]), "readonly database") {
				t.Fatalf("write on a read-only open: %v, want SQLite's own read-only refusal", resp)
			}
			if after := fileState(t, db); after != before {
				t.Fatalf("the database or its folder changed: %s -> %s", before, after)
			}
		})
	}
	// Control: the same request on a read-write open does write, so the
	// refusals above came from the open flags, not from the policy.
	ctl := filepath.Join(testDir(t), "control.db")
	if err := os.WriteFile(ctl, mustRead(t, db), 0o644); err != nil {
		t.Fatal(err)
	}
	if resp := runWorker(t, ctl, false, "write", tests[0].sql); resp["ok"] != true {
		t.Fatalf("control write failed: %v", resp)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
