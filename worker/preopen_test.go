package worker

import (
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
)

// TestReadiedAhead runs requests of every mode on a connection a standby
// readied ahead for read (or select): the request's mode must hold as if
// the connection were new, query_only and the authorizer included.
func TestReadiedAhead(t *testing.T) {
	tests := []struct {
		name         string
		op           ipc.Op
		mode         ipc.Mode
		sql          string
		readOnlyFile bool
		code         errcode.Code
		text         string
	}{
		{"read", ipc.OpQuery, "read", "SELECT name FROM t WHERE id = 1", false, "", "name\na\n# 1 rows"},
		{"write refused in read", ipc.OpQuery, "read", "INSERT INTO t (name) VALUES ('x')", false, errcode.ReadOnly, "write_query"},
		{"protected in read", ipc.OpQuery, "read", "DELETE FROM memory_events", false, errcode.Protected, "memory_events"},
		{"insert in write", ipc.OpQuery, "write", "INSERT INTO t (name) VALUES ('x')", false, "", "ok: 1 rows affected (last_insert_rowid=4)"},
		{"protected in write", ipc.OpQuery, "write", "INSERT INTO memory_events (content) VALUES ('x')", false, errcode.Protected, "memory_events"},
		{"delete in destructive", ipc.OpQuery, "destructive", "DELETE FROM t WHERE id = 3", false, "", "ok: 1 rows affected"},
		{"create view", ipc.OpCreateView, "", "", false, "", ""},
		{"select on a read-only file", ipc.OpQuery, "select", "SELECT count(*) AS n FROM t", true, "", "n\n3\n# 1 rows"},
		{"explain refused in select", ipc.OpQuery, "select", "EXPLAIN SELECT 1", true, errcode.ReadOnly, ""},
		{"other file than readied", ipc.OpQuery, "write", "INSERT INTO t (name) VALUES ('y')", false, "", "ok: 1 rows affected"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := testDB(t)
			readied := db
			if tt.name == "other file than readied" {
				readied = testDB(t)
			}
			preopen(readied, tt.readOnlyFile, hclog.NewNullLogger())
			readyAhead(hclog.NewNullLogger())
			ex := preopened.ex
			if ex == nil || !ex.queryOnly || !ex.authorizer {
				t.Fatalf("not readied ahead: %+v", ex)
			}
			req := request(db, tt.op, tt.mode, tt.sql)
			req.ReadOnlyFile = tt.readOnlyFile
			if tt.op == ipc.OpCreateView {
				req.View = &ipc.View{Name: "v", Select: "SELECT name FROM t"}
			}
			resp := execute(req, hclog.NewNullLogger())
			if preopened.ex != nil {
				t.Fatal("the readied connection was not taken")
			}
			if tt.code != "" {
				if resp.OK || resp.Code != tt.code || !strings.Contains(resp.Message, tt.text) {
					t.Fatalf("got %s: %s (ok=%v), want %s containing %q", resp.Code, resp.Message, resp.OK, tt.code, tt.text)
				}
				return
			}
			if !resp.OK || !strings.Contains(resp.Text, tt.text) {
				t.Fatalf("got %+v, want %q", resp, tt.text)
			}
		})
	}
}
