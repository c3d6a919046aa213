package cli

import (
	"fmt"
	"strings"
	"testing"
)

func TestTakeBool(t *testing.T) {
	tests := []struct {
		args  []string
		found bool
		rest  string
	}{
		{[]string{"--db", "m.db", "t"}, false, "[--db m.db t]"},
		{[]string{"--must-exist", "--db", "m.db"}, true, "[--db m.db]"},
		{[]string{"-must-exist=true", "t"}, true, "[t]"},
		{[]string{"--must-exist=false", "t"}, false, "[t]"},
		{[]string{"must-exist"}, false, "[must-exist]"},
		{[]string{"--", "--must-exist"}, false, "[-- --must-exist]"},
	}
	for _, tt := range tests {
		found, rest := takeBool(tt.args, "must-exist")
		if found != tt.found || fmt.Sprint(rest) != tt.rest {
			t.Errorf("%q: %v %q, want %v %s", tt.args, found, rest, tt.found, tt.rest)
		}
	}
}

func TestMovedFlags(t *testing.T) {
	tests := []struct {
		rest []string
		want string
	}{
		{[]string{"read_query", `{"query":"SELECT 1"}`, "--db", "m.db"}, `mcp-sqlite-memory call --db m.db read_query '{"query":"SELECT 1"}'`},
		{[]string{"verify_chain", "-v", "--db=m.db"}, `mcp-sqlite-memory call -v --db=m.db verify_chain`},
		{[]string{"read_query", "--db", "my db.db", `{"query":"it's"}`}, `mcp-sqlite-memory call --db 'my db.db' read_query '{"query":"it'\''s"}'`},
	}
	for _, tt := range tests {
		if got := movedFlags(tt.rest); got != tt.want {
			t.Errorf("%q:\n got %s\nwant %s", tt.rest, got, tt.want)
		}
	}
}

func TestCallArguments(t *testing.T) {
	tests := []struct {
		arg  string
		want string // the map, or a part of the refusal
	}{
		{`{"query":"SELECT 1"}`, "map[query:SELECT 1]"},
		{`{}`, "map[]"},
		{`"SELECT 1"`, `got a string "SELECT 1"`},
		{`[1]`, "got an array [1]"},
		{`3`, "got a number 3"},
		{`null`, "got null null"},
		{`{query: 1}`, "is not valid JSON"},
	}
	for _, tt := range tests {
		m, err := callArguments([]string{"read_query", tt.arg})
		got := fmt.Sprint(m)
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, tt.want) || strings.Contains(got, "interface {}") {
			t.Errorf("%s: %s, want %q", tt.arg, got, tt.want)
		}
	}
}

func TestClosestTool(t *testing.T) {
	tools := []string{"read_query", "write_query", "search_text", "list_tables", "get_resume_context"}
	for name, want := range map[string]string{
		"read_qury": "read_query", "search": "search_text", "Search": "search_text",
		"resume": "get_resume_context", "tables": "list_tables", "xyz": "", "se": "",
	} {
		if got := closestTool(name, tools); got != want {
			t.Errorf("%q: %q, want %q", name, got, want)
		}
	}
}
