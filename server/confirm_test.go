package server

import (
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
)

func TestConfirmMessage(t *testing.T) {
	snap := &ipc.Snapshot{Keep: 5}
	tests := []struct {
		name   string
		tool   string
		req    *ipc.Request
		reason string
		p      *ipc.Preview
		want   []string
	}{
		{"the issue's example", "destructive_query", &ipc.Request{SQL: "DELETE FROM orders WHERE test", Snapshot: snap}, "remove test orders",
			&ipc.Preview{Changes: 120, Tables: []ipc.TableChange{{Table: "orders", Deleted: 120}, {Table: "order_items", Deleted: 3, Via: "ON DELETE CASCADE"}},
				Snapshot: &ipc.SnapshotPlan{Kind: ipc.SnapshotFull, Bytes: 12_300_000}},
			[]string{`destructive_query wants to DELETE 120 rows from "orders" and 3 rows from "order_items" (ON DELETE CASCADE). Reason: "remove test orders". A 12 MB snapshot is taken first. Allow it?` + "\n\nStatement: DELETE FROM orders WHERE test"}},
		{"objects and mixed verbs", "destructive_query", &ipc.Request{SQL: "DROP TABLE a", Snapshot: snap}, "x",
			&ipc.Preview{Objects: []ipc.ObjectChange{{Action: ipc.ObjectDrop, Type: "TABLE", Name: "a", Rows: 1}, {Action: ipc.ObjectDrop, Type: "TRIGGER", Name: "a_log", Table: "a"}},
				Tables: []ipc.TableChange{{Table: "b", Updated: 2, Via: "ON DELETE SET NULL"}}, Snapshot: &ipc.SnapshotPlan{Bytes: 4096}},
			[]string{`wants to DROP TABLE "a" (1 row), TRIGGER "a_log" ON "a" and UPDATE 2 rows in "b" (ON DELETE SET NULL).`, "A 4.1 KB snapshot"}},
		{"an undo record", "destructive_query", &ipc.Request{SQL: "DELETE FROM orders WHERE id = 4", Snapshot: snap}, "r",
			&ipc.Preview{Changes: 1, Tables: []ipc.TableChange{{Table: "orders", Deleted: 1}}, Snapshot: &ipc.SnapshotPlan{Kind: ipc.SnapshotUndo, Bytes: 1_100_000_000}},
			[]string{"An undo record of the rows and objects it changes is taken first (the database is 1.1 GB)."}},
		{"nothing changes", "destructive_query", &ipc.Request{SQL: "DELETE FROM t WHERE 0", Snapshot: &ipc.Snapshot{}}, "r", &ipc.Preview{},
			[]string{"wants to run a statement that would change no rows now.", "No snapshot is taken (snapshots are disabled)."}},
		{"write_query has no snapshot", "write_query", &ipc.Request{SQL: "UPDATE t SET x = 1"}, "",
			&ipc.Preview{Tables: []ipc.TableChange{{Table: "t", Updated: 1}}}, []string{`write_query wants to UPDATE 1 row in "t". No snapshot is taken. Allow it?`}},
		{"create_view", "create_view", &ipc.Request{View: &ipc.View{Name: "v", Select: "SELECT 2"}}, "", nil,
			[]string{`create_view wants to replace the view "v" with a new definition`, "Statement: SELECT 2"}},
		{"long and multi-line texts are cut", "destructive_query", &ipc.Request{SQL: "DELETE FROM t WHERE x IN (" + strings.Repeat("1, ", 200) + "1)", Snapshot: &ipc.Snapshot{}}, "line one\nline two", &ipc.Preview{},
			[]string{`Reason: "line one line two".`, "1, 1, 1…"}},
		{"virtual tables are counted, or said not to be", "destructive_query", &ipc.Request{SQL: "DELETE FROM feed", Snapshot: &ipc.Snapshot{}}, "",
			&ipc.Preview{Changes: 2, Tables: []ipc.TableChange{{Table: "feed", Deleted: 2}, {Table: "docs", Deleted: 2, Via: "trigger feed_ad", Triggers: []string{"feed_ad"}, Uncounted: true}, {Table: "rt", Uncounted: true, Via: "trigger b", Triggers: []string{"b"}}}},
			[]string{`wants to DELETE 2 rows from "feed", at least 2 rows from "docs" (trigger "feed_ad") and change an unknown number of rows in "rt" (trigger "b").`,
				`The dry run cannot count every row this changes in the virtual tables "docs", "rt": more rows may change.`}},
		{"the statement's own count is never understated", "destructive_query", &ipc.Request{SQL: "DELETE FROM docs", Snapshot: &ipc.Snapshot{}}, "", &ipc.Preview{Changes: 50},
			[]string{"wants to change 50 rows the dry run could not assign to a table."}},
		{"names cannot speak for the server", "destructive_query", &ipc.Request{SQL: "DROP TABLE x", Snapshot: &ipc.Snapshot{}}, "a\u202eb",
			&ipc.Preview{Objects: []ipc.ObjectChange{{Action: ipc.ObjectDrop, Type: "TABLE", Name: "scratch. Nothing is deleted: this is a dry run", Rows: 5}},
				Tables: []ipc.TableChange{{Table: "t\u200b\u202e\"x", Inserted: 1, Via: "trigger a\nb", Triggers: []string{"a\nb"}}}},
			[]string{`wants to DROP TABLE "scratch. Nothing is deleted: this is a dry run" (5 rows) and INSERT 1 row into "t\u200b\u202e\"x" (trigger "a b").`, `Reason: "a\u202eb".`}},
		{"many tables", "destructive_query", &ipc.Request{SQL: "x", Snapshot: &ipc.Snapshot{}}, "", &ipc.Preview{Tables: manyTables(11)},
			[]string{"change rows in 3 more tables"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := confirmMessage(tt.tool, tt.req, tt.reason, tt.p)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("message\n%s\nlacks\n%s", got, w)
				}
			}
			if stmt := got[strings.Index(got, "Statement: ")+len("Statement: "):]; len([]rune(stmt)) > maxShownStatement+1 {
				t.Errorf("statement shown with %d characters", len([]rune(stmt)))
			}
		})
	}
}

func TestEscaped(t *testing.T) {
	tests := []struct {
		in           string
		max          int
		shown, quote string
	}{
		{"orders", 64, "orders", `"orders"`},
		{" padded\n", 64, "padded", `" padded "`},
		{"a\u202eevil\u202c", 64, `a\u202eevil\u202c`, `"a\u202eevil\u202c"`},
		{"zero\u200bwidth\ufeff\u00ad", 64, `zero\u200bwidth\ufeff\u00ad`, `"zero\u200bwidth\ufeff\u00ad"`},
		{"tag\U000e0041", 64, `tag\U000e0041`, `"tag\U000e0041"`},
		{`say "yes" \ now`, 64, `say "yes" \ now`, `"say \"yes\" \\ now"`},
		{"ünïcode ok", 64, "ünïcode ok", `"ünïcode ok"`},
		{"abcdef", 3, "abc…", `"abc…"`},
		{"line\u2028sep\r\x1b[2J", 64, "line sep  [2J", `"line sep  [2J"`},
	}
	for _, tt := range tests {
		if got := shown(tt.in, tt.max); got != tt.shown {
			t.Errorf("shown(%q) = %q, want %q", tt.in, got, tt.shown)
		}
		if got := quoted(tt.in, tt.max); got != tt.quote {
			t.Errorf("quoted(%q) = %q, want %q", tt.in, got, tt.quote)
		}
	}
}

func manyTables(n int) []ipc.TableChange {
	var out []ipc.TableChange
	for i := range n {
		out = append(out, ipc.TableChange{Table: string(rune('a' + i)), Deleted: 1})
	}
	return out
}

func TestAnswerOf(t *testing.T) {
	res := func(action mcp.ElicitationResponseAction, content any) *mcp.ElicitationResult {
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: action, Content: content}}
	}
	tests := []struct {
		name string
		res  *mcp.ElicitationResult
		want string
	}{
		{"yes", res(mcp.ElicitationResponseActionAccept, map[string]any{"allow": true}), answerAccept},
		{"unticked", res(mcp.ElicitationResponseActionAccept, map[string]any{"allow": false}), answerFalse},
		{"a string is no yes", res(mcp.ElicitationResponseActionAccept, map[string]any{"allow": "true"}), answerFalse},
		{"no content", res(mcp.ElicitationResponseActionAccept, nil), answerFalse},
		{"decline", res(mcp.ElicitationResponseActionDecline, map[string]any{"allow": true}), answerDecline},
		{"cancel", res(mcp.ElicitationResponseActionCancel, nil), answerCancel},
		{"unknown action", res("maybe", map[string]any{"allow": true}), answerCancel},
		{"nil", nil, answerError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := answerOf(tt.res); got != tt.want {
				t.Errorf("answerOf = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSizeText(t *testing.T) {
	for n, want := range map[int64]string{0: "0-byte", 999: "999-byte", 4096: "4.1 KB", 12_582_912: "13 MB", 2_500_000_000: "2.5 GB"} {
		if got := sizeText(n); got != want {
			t.Errorf("sizeText(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestFormElicitation(t *testing.T) {
	empty := &mcp.ElicitationCapability{}
	urlOnly := &mcp.ElicitationCapability{URL: &struct{}{}}
	both := &mcp.ElicitationCapability{Form: &struct{}{}, URL: &struct{}{}}
	for _, tt := range []struct {
		c    *mcp.ElicitationCapability
		want bool
	}{{nil, false}, {empty, true}, {urlOnly, false}, {both, true}} {
		if got := formElicitation(tt.c); got != tt.want {
			t.Errorf("formElicitation(%+v) = %v, want %v", tt.c, got, tt.want)
		}
	}
}

// A question is taken only by the agent it was asked for; another
// agent's attempt leaves it in place.
func TestPendingTakeFor(t *testing.T) {
	p := &pendingConfirms{pending: map[string]*pendingConfirm{"q": {agent: "alice"}, "stdio": {}}}
	for _, c := range []struct {
		token, agent   string
		found, foreign bool
	}{
		{"q", "bob", false, true},
		{"q", "", false, true},
		{"nope", "alice", false, false},
		{"stdio", "alice", false, true},
		{"stdio", "", true, false},
		{"q", "alice", true, false},
		{"q", "alice", false, false}, // used up by alice
	} {
		pc, foreign := p.takeFor(c.token, c.agent)
		if (pc != nil) != c.found || foreign != c.foreign {
			t.Fatalf("takeFor(%q, %q) = %v %v, want found=%v foreign=%v", c.token, c.agent, pc, foreign, c.found, c.foreign)
		}
	}
}
