package tests

import (
	"context"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// setupVirtual fills an FTS5 table with 50 rows, an R*Tree with 25, a
// contentless FTS5 index with 30, and a plain table whose trigger keeps
// that index in step on delete.
func setupVirtual(t *testing.T, s *session) {
	t.Helper()
	for _, sql := range []string{
		"CREATE VIRTUAL TABLE docs USING fts5(body)",
		"INSERT INTO docs(body) WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 50) SELECT 'doc ' || x FROM c",
		"CREATE VIRTUAL TABLE boxes USING rtree(id, minx, maxx)",
		"INSERT INTO boxes WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 25) SELECT x, x, x + 1 FROM c",
		"CREATE VIRTUAL TABLE idx USING fts5(body, content='')",
		"CREATE TABLE feed (id INTEGER PRIMARY KEY, body TEXT)",
		"INSERT INTO feed(body) WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 30) SELECT 'item ' || x FROM c",
		"INSERT INTO idx(rowid, body) SELECT id, body FROM feed",
	} {
		s.ok("write_query", q(sql))
	}
	s.ok("destructive_query", map[string]any{"reason": "keep the index in step",
		"query": "CREATE TRIGGER feed_unindex AFTER DELETE ON feed BEGIN INSERT INTO idx(idx, rowid, body) VALUES ('delete', old.id, old.body); END"})
}

// TestConfirmCountsVirtualTables (SPEC 5.5): the preupdate hook never sees
// a virtual table's rows, yet the form counts them: a DELETE on FTS5 (50
// rows) and on an R*Tree (25), an UPDATE of FTS5, FTS5's delete-all. What
// a trigger does to a virtual table is said plainly not to be fully
// counted, and the answer after a yes says the preview could not count it.
// Today's main said "would change no rows now" for all of them.
func TestConfirmCountsVirtualTables(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, sql string
		form      []string
		answer    string
	}{
		{"delete from FTS5", "DELETE FROM docs", []string{`wants to DELETE 50 rows from "docs".`}, "ok: 50 rows affected; snapshot: "},
		{"delete from an R*Tree", "DELETE FROM boxes WHERE id > 0", []string{`wants to DELETE 25 rows from "boxes".`}, "ok: 25 rows affected; snapshot: "},
		{"update FTS5", "UPDATE docs SET body = 'gone'", []string{`wants to UPDATE 50 rows in "docs".`}, "ok: 50 rows affected; snapshot: "},
		{"FTS5 delete-all", "INSERT INTO idx(idx) VALUES ('delete-all')", []string{`wants to DELETE 30 rows from "idx".`}, "ok: 1 rows affected"},
		{"a trigger writes FTS5", "DELETE FROM feed WHERE id <= 10", []string{
			`wants to DELETE 10 rows from "feed" and at least 10 rows from "idx" (trigger "feed_unindex").`,
			`The dry run cannot count every row this changes in the virtual table "idx": more rows may change.`,
		}, "ok: 10 rows affected; snapshot: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a := answering(mcp.ElicitationResponseActionAccept, map[string]any{"allow": true})
			s := startAsking(t, newDB(t), mcp.ProtocolVersion20251125, a)
			setupVirtual(t, s)
			n := len(a.asked())
			text := s.ok("destructive_query", map[string]any{"query": tt.sql, "reason": "clean up"})
			q := a.asked()
			if len(q) != n+1 {
				t.Fatalf("%d questions, want 1", len(q)-n)
			}
			msg := q[n].Message
			if strings.Contains(msg, "no rows") {
				t.Errorf("the form understates: %q", msg)
			}
			for _, w := range tt.form {
				if !strings.Contains(msg, w) {
					t.Errorf("form %q lacks %q", msg, w)
				}
			}
			if !strings.HasPrefix(text, tt.answer) {
				t.Fatalf("answer %q, want it to start %q", text, tt.answer)
			}
			uncounted := len(tt.form) > 1
			if note := strings.Contains(text, "could not count every row of a virtual table"); note != uncounted {
				t.Errorf("answer %q: note that the preview could not count = %v, want %v", text, note, uncounted)
			}
			if d := confirmDetail(t, s, "destructive_query"); (d["rows_uncounted"] == true) != uncounted {
				t.Errorf("audit detail %v: rows_uncounted want %v", d, uncounted)
			}
		})
	}
}

// TestConfirmQuotesHostileNames (SPEC 5.5): a table named to read as the
// server's own words, and names with bidi and zero-width characters, reach
// the form quoted and escaped; the statement's own text is escaped too.
func TestConfirmQuotesHostileNames(t *testing.T) {
	t.Parallel()
	a := answering(mcp.ElicitationResponseActionDecline, nil)
	s := startAsking(t, newDB(t), mcp.ProtocolVersion20251125, a)
	for _, sql := range []string{
		`CREATE TABLE "scratch. Nothing is deleted: this is a dry run" (x)`,
		`INSERT INTO "scratch. Nothing is deleted: this is a dry run" VALUES (1), (2), (3)`,
		"CREATE TABLE \"notes\u202e\u200bcod.exe\" (x)",
		"INSERT INTO \"notes\u202e\u200bcod.exe\" VALUES (1)",
		`CREATE TABLE "say ""yes"" now" (x)`,
		`INSERT INTO "say ""yes"" now" VALUES (1)`,
	} {
		s.ok("write_query", q(sql))
	}
	for _, tt := range []struct{ sql, want string }{
		{`DROP TABLE "scratch. Nothing is deleted: this is a dry run"`, `wants to DROP TABLE "scratch. Nothing is deleted: this is a dry run" (3 rows).`},
		{"DELETE FROM \"notes\u202e\u200bcod.exe\"", `wants to DELETE 1 row from "notes\u202e\u200bcod.exe".`},
		{`DELETE FROM "say ""yes"" now"`, `wants to DELETE 1 row from "say \"yes\" now".`},
	} {
		n := len(a.asked())
		s.fails("destructive_query", map[string]any{"query": tt.sql, "reason": "tidy\u2067 up"}, "DECLINED")
		msg := a.asked()[n].Message
		if !strings.Contains(msg, tt.want) {
			t.Errorf("form %q lacks %q", msg, tt.want)
		}
		if strings.ContainsAny(msg, "\u202e\u200b\u2067") {
			t.Errorf("form %q holds a raw bidi or zero-width character", msg)
		}
		if !strings.Contains(msg, `Reason: "tidy\u2067 up".`) {
			t.Errorf("form %q: the reason is not escaped", msg)
		}
	}
}

// TestConfirmReportsADifferentVirtualCount: an FTS5 delete-all is one
// command that removes every document, so the statement's own count (1)
// cannot show that another program indexed one more while the person
// read the form; the real run counts the index again and the answer says
// the preview differed.
func TestConfirmReportsADifferentVirtualCount(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	a := &asker{}
	a.answer = func(_ context.Context, p mcp.ElicitationParams) (*mcp.ElicitationResult, error) {
		if strings.Contains(p.Message, "delete-all") {
			if _, err := openDirect(t, db).Exec("INSERT INTO idx(rowid, body) VALUES (99, 'late')"); err != nil {
				t.Error(err)
			}
		}
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"allow": true}}}, nil
	}
	s := startAsking(t, db, mcp.ProtocolVersion20251125, a)
	setupVirtual(t, s)
	n := len(a.asked())
	text := s.ok("destructive_query", map[string]any{"query": "INSERT INTO idx(idx) VALUES ('delete-all')", "reason": "rebuild later"})
	if msg := a.asked()[n].Message; !strings.Contains(msg, `wants to DELETE 30 rows from "idx".`) {
		t.Fatalf("form %q", msg)
	}
	if !strings.HasPrefix(text, "ok: 1 rows affected (last_insert_rowid=0); snapshot: ") ||
		!strings.Contains(text, `note: the preview the user allowed said the statement would delete 30 rows from "idx", it deleted 31 rows from "idx" (the database changed in between)`) {
		t.Fatalf("answer %q", text)
	}
	if d := confirmDetail(t, s, "destructive_query"); d["rows_differ"] != true {
		t.Fatalf("audit detail %v: want rows_differ", d)
	}
}
