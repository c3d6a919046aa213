package worker

import (
	"strings"
	"testing"
)

func TestMatchHint(t *testing.T) {
	cases := []struct {
		msg, sql, want string
	}{
		{`fts5: syntax error near "("`, `SELECT * FROM f WHERE f MATCH 'a ('`, "FTS5 query syntax"},
		{`unknown special query: x`, `SELECT * FROM f WHERE f MATCH '*x'`, "FTS5 query syntax"},
		{`no such column: events`, `SELECT * FROM f WHERE f match 'max-events'`, "a hyphen or colon there starts a column filter"},
		{`no such column: nope`, `SELECT nope FROM t`, ""},
		{`unable to use function MATCH in the requested context`, `SELECT * FROM t WHERE body MATCH 'x'`, "MATCH needs a full-text table on its left"},
		{`no such table: t`, `SELECT * FROM t`, ""},
	}
	for _, c := range cases {
		t.Run(c.msg, func(t *testing.T) {
			got := matchHint(c.msg, c.sql)
			if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
				t.Fatalf("matchHint(%q) = %q, want %q", c.msg, got, c.want)
			}
		})
	}
}
