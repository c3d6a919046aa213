package memory

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestIdentParts(t *testing.T) {
	cases := []struct {
		in   string
		want string // parts, space-separated
	}{
		{"plain words only", ""},
		{"parseConfig panicked", "parse config"},
		{"HTTPServer and getHTTPResponse", "http server get response"},
		{"cache_key", "cache key cachekey"},
		{"max_update_rows", "max update rows maxupdaterows"},
		{"golangci-lint and prefers-color-scheme", "golangcilint preferscolorscheme"},
		{"Intl.DateTimeFormat", "date time format"},
		{"internal/store/txn.go", ""},
		{"_private __dunder__", ""},
		{"transfers_by_account v2Parser utf8", "transfers by account transfersbyaccount v2 parser"},
		{"parseConfig parseConfig parse_config", "parse config parseconfig"}, // each part once
		{"ÉmileDurand café", "émile durand"},
		{"-x- --", ""},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			if got := strings.Join(identParts(c.in, nil), " "); got != c.want {
				t.Fatalf("identParts(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
	if got := recallText("no identifiers here"); got != "no identifiers here" {
		t.Errorf("recallText of prose = %q, want it unchanged", got)
	}
	if got := recallText("fixed parseConfig"); got != "fixed parseConfig\nparse config" {
		t.Errorf("recallText = %q", got)
	}
}

func TestRecallMatch(t *testing.T) {
	cases := []struct{ in, want string }{
		{"login cookie", `"login" OR "cookie"`},
		{"parse config", `"parse" OR "config"`},
		{"parseConfig", `"parseConfig" OR "parse" OR "config"`},
		{"cache_key etags", `"cache_key" OR "etags" OR "cache" OR "key" OR "cachekey"`},
		{"parse parseConfig", `"parse" OR "parseConfig" OR "config"`},           // a part already asked for is not repeated
		{`"parseConfig failed" parseCo*`, `"parseConfig failed" OR "parseCo"*`}, // phrases and prefixes as written
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := recallMatch(c.in)
			if err != nil || got != c.want {
				t.Fatalf("recallMatch(%q) = %q, %v; want %q", c.in, got, err, c.want)
			}
		})
	}
}

// TestRecallIndexMigratesInPlace: a file written by a server without the
// recall index (or by the reference) grows it at start, events and
// checkpoints, and the stemmed, identifier-aware recall finds their rows;
// the file's other objects are left as they were.
func TestRecallIndexMigratesInPlace(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	s := openStore(t, path)
	e1, err := s.Append(ctx, "s", "bug", "parseConfig panicked on an empty file")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Checkpoint(ctx, "s", "the configs load now"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// As the previous version left it: no recall index; then another
	// program appends.
	db := rawDB(t, path)
	mustExec(t, db, `DROP TABLE memory_recall`)
	e2 := appendLikeReference(t, db, "2026-02-01T10:00:00Z", "20260201T100000Z-cafe", "decision", "cache_key is the account id")
	before := masterRows(t, db)

	s2 := openStore(t, path)
	if !slices.Contains(s2.Opened().Added, "memory_recall") {
		t.Errorf("Opened().Added = %v, want memory_recall", s2.Opened().Added)
	}
	after := masterRows(t, db)
	if !slices.Equal(before, after[:len(before)]) {
		t.Fatalf("the start changed existing objects:\nbefore %q\nafter  %q", before, after)
	}
	for q, want := range map[string][]int64{
		`"parse" config`:             {e1.ID},
		`"cache" AND "key"`:          {e2},
		`config AND kind:checkpoint`: {-1},
		`panicking`:                  {e1.ID},
	} {
		if got := matchIDs(t, db, `SELECT rowid FROM memory_recall WHERE memory_recall MATCH ? ORDER BY rank`, q); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", q, got, want)
		}
	}
	if v, err := s2.Verify(ctx); err != nil || !v.OK || v.Events != e2 {
		t.Fatalf("verify = %+v, %v", v, err)
	}
	mustExec(t, db, `INSERT INTO memory_recall(memory_recall, rank) VALUES('integrity-check', 0)`)
}
