package server

import (
	"context"
	"database/sql"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/cluster/rqlite"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
)

func TestMirrored(t *testing.T) {
	objs := []schemaObject{
		{"table", "notes", "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)"},
		{"table", "sqlite_sequence", "CREATE TABLE sqlite_sequence(name,seq)"},
		{"index", "sqlite_autoindex_x_1", ""},
		{"table", "docs", "CREATE VIRTUAL TABLE docs USING fts5(body)"},
		{"table", "docs_data", "CREATE TABLE 'docs_data'(id INTEGER PRIMARY KEY, block BLOB)"},
		{"table", "docs_config", "CREATE TABLE 'docs_config'(k PRIMARY KEY, v) WITHOUT ROWID"},
		{"table", "notes_data", "CREATE TABLE notes_data (x)"}, // notes is no virtual table
		{"table", "Places", "create virtual table Places using rtree(id, x0, x1)"},
		{"table", "places_node", "CREATE TABLE \"places_node\"(nodeno INTEGER PRIMARY KEY,data)"},
		{"view", "recent", "CREATE VIEW recent AS SELECT * FROM notes"},
		{"trigger", "t1", "CREATE TRIGGER t1 AFTER INSERT ON notes BEGIN SELECT 1; END"},
	}
	var got []string
	for _, o := range mirrored(objs) {
		got = append(got, o.name)
	}
	want := []string{"notes", "docs", "notes_data", "Places", "recent", "t1"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("mirrored %v, want %v", got, want)
	}
}

func TestRenderRows(t *testing.T) {
	rows := rqlite.Rows{Columns: []string{"id", "body", "score", "b"}, Values: [][]any{
		{int64(1), "first", 2.0, []byte{0, 255}},
		{int64(2), "", 0.1, nil},
		{int64(3), nil, 1e16, nil},
		{int64(4), "a much longer body", float64(-3), nil},
	}}
	caps := ipc.Caps{MaxRows: 50, MaxResultBytes: 1 << 20, MaxCellChars: 6}
	tests := []struct {
		name string
		req  ipc.Request
		want string
	}{
		{"all", ipc.Request{Limit: 10, Caps: caps}, "id,body,score,b\n1,first,2.0,<blob 2 bytes>\n2,\"\",0.1,\n3,,1e+16,\n4,a much...[+12 chars],-3.0,\n# 4 rows; 1 cells cut to 6 chars"},
		{"page", ipc.Request{Limit: 2, Offset: 1, Caps: caps}, "id,body,score,b\n2,\"\",0.1,\n3,,1e+16,\n# 2 rows, truncated by limit=2 (more rows exist; raise limit up to 50, use offset=3, or narrow the query)"},
		{"past the end", ipc.Request{Limit: 2, Offset: 9, Caps: caps}, "id,body,score,b\n# 0 rows"},
		{"default limit", ipc.Request{Caps: caps, Offset: 3}, "id,body,score,b\n4,a much...[+12 chars],-3.0,\n# 1 rows; 1 cells cut to 6 chars"},
		{"bytes", ipc.Request{Limit: 10, Caps: ipc.Caps{MaxRows: 50, MaxResultBytes: 20}}, "id,body,score,b\n1,first,2.0,<blob 2 bytes>\n# 1 rows, truncated at 20 bytes (select fewer columns or narrow the query)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, js, _ := renderRows(&tt.req, rows)
			if text != tt.want || js != nil {
				t.Fatalf("got\n%s\nwant\n%s", text, tt.want)
			}
		})
	}
	req := ipc.Request{Limit: 1, Format: ipc.FormatJSON, Caps: caps}
	text, js, n := renderRows(&req, rows)
	if n != 1 || string(js) != text || text == "" || text[0] != '{' {
		t.Fatalf("json: %d rows, %s", n, text)
	}
}

// TestMirrorRebuild: the mirror takes a new schema in place and carries
// the cluster's schema version, not its own count of changes.
func TestMirrorRebuild(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), mirrorName)
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r := &remote{mirror: path, db: db, log: hclog.NewNullLogger(), version: -1}
	first := []schemaObject{
		{"table", "a", "CREATE TABLE a (x)"},
		{"table", "f", "CREATE VIRTUAL TABLE f USING fts5(body)"},
		{"table", "f_data", "CREATE TABLE 'f_data'(id INTEGER PRIMARY KEY, block BLOB)"},
		{"index", "ax", "CREATE INDEX ax ON a(x)"},
		{"view", "v", "CREATE VIEW v AS SELECT x FROM a"},
	}
	second := []schemaObject{
		{"view", "w", "CREATE VIEW w AS SELECT y FROM b JOIN c"}, // before its tables: made in a second round
		{"table", "b", "CREATE TABLE b (y)"},
		{"table", "f", "CREATE VIRTUAL TABLE f USING fts5(body)"},
		{"trigger", "tb", "CREATE TRIGGER tb AFTER INSERT ON b BEGIN INSERT INTO c VALUES (new.y); END"},
		{"table", "c", "CREATE TABLE c (z)"},
		{"table", "odd", "CREATE VIRTUAL TABLE odd USING nosuchmodule(x)"}, // left out
	}
	for _, step := range []struct {
		objs    []schemaObject
		version int64
		want    []string
	}{
		{first, 41, []string{"a", "ax", "f", "v"}},
		{second, 7, []string{"b", "c", "f", "tb", "w"}},
	} {
		if err := r.rebuild(ctx, step.objs, step.version); err != nil {
			t.Fatal(err)
		}
		var names []string
		rows, err := db.Query("SELECT name FROM sqlite_schema WHERE name NOT LIKE 'f\\_%' ESCAPE '\\' ORDER BY name")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var n string
			rows.Scan(&n)
			names = append(names, n)
		}
		rows.Close()
		var v int64
		if err := db.QueryRow("PRAGMA schema_version").Scan(&v); err != nil || v != step.version {
			t.Fatalf("schema_version %d (%v), want %d", v, err, step.version)
		}
		if !reflect.DeepEqual(names, step.want) {
			t.Fatalf("objects %v, want %v", names, step.want)
		}
	}
}
