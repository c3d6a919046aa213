package memory

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestIdentParts(t *testing.T) {
	cases := []struct {
		in   string
		want string // parts, space-separated
	}{
		{"plain words only", ""},
		{"parseConfig panicked", "parse config"},
		{"HTTPServer and getHTTPResponse", "http server get http response"}, // each identifier's words together
		{"cache_key", "cache key cachekey"},
		{"max_update_rows", "max update rows maxupdaterows"},
		{"golangci-lint and prefers-color-scheme", "golangcilint preferscolorscheme"},
		{"Intl.DateTimeFormat", "date time format"},
		{"internal/store/txn.go", ""},
		{"_private __dunder__", ""},
		{"transfers_by_account v2Parser utf8", "transfers by account transfersbyaccount v2 parser"},
		{"parseConfig parseConfig parse_config", "parse config parse config parseconfig"}, // each identifier once
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
		{"parseConfig", `"parseConfig" OR "parse config"`}, // a phrase: the part "orders" of orders_7 may be in every event
		{"cache_key etags", `"cache_key" OR "etags" OR "cache key" OR "cachekey"`},
		{"HTTPServer", `"HTTPServer" OR "http server"`},
		{"a_b_c_d_e_f_g_h_i", `"a_b_c_d_e_f_g_h_i" OR "abcdefghi"`},                       // no phrase of more than 8 words
		{"parseConfig parse_config", `"parseConfig" OR "parse_config" OR "parse config"`}, // a form already asked for (parseconfig, case aside) is not repeated
		{`"parseConfig failed" parseCo*`, `"parseConfig failed" OR "parseCo"*`},           // phrases and prefixes as written
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

func TestParseRecallTime(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		in   string
		end  bool
		want string // TimeLayout, "" for the zero time, "error"
	}{
		{"", false, ""},
		{"2026-01-05", false, "2026-01-05T00:00:00Z"},
		{"2026-01-05", true, "2026-01-06T00:00:00Z"}, // a date as until includes its day
		{"2026-01-05T09:30", false, "2026-01-05T09:30:00Z"},
		{"2026-01-05T09:30:00Z", true, "2026-01-05T09:30:01Z"},
		{"2026-01-05T10:30:00+01:00", false, "2026-01-05T09:30:00Z"},
		{"2026-01-05 09:30", false, "2026-01-05T09:30:00Z"},
		{"7d", false, "2026-03-03T12:00:00Z"},
		{"2w", true, "2026-02-24T12:00:00Z"},
		{"12h", false, "2026-03-10T00:00:00Z"},
		{"1h30m", false, "2026-03-10T10:30:00Z"},
		{" 7d ", false, "2026-03-03T12:00:00Z"},
		{"yesterday", false, "error"},
		{"-7d", false, "error"},
		{"-1h", false, "error"},
		{"2026-13-01", false, "error"},
		{"7 days", false, "error"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := ParseRecallTime(c.in, now, c.end)
			switch {
			case c.want == "error":
				if err == nil {
					t.Fatalf("ParseRecallTime(%q) = %v, want an error", c.in, got)
				}
			case err != nil:
				t.Fatalf("ParseRecallTime(%q): %v", c.in, err)
			case c.want == "" && !got.IsZero(), c.want != "" && got.Format(TimeLayout) != c.want:
				t.Fatalf("ParseRecallTime(%q, end=%v) = %v, want %s", c.in, c.end, got, c.want)
			}
		})
	}
}

func TestRecallSnippet(t *testing.T) {
	long := strings.Repeat("filler words here ", 20) + "the parseConfig function panicked" + strings.Repeat(" more filler", 20)
	cases := []struct {
		text  string
		words []string
		want  string
	}{
		{"short text", []string{"x"}, "short text"},
		{"two\nlines\r\nthree", nil, "two⏎lines⏎three"},
		{long, []string{"parse"}, "..." + string([]rune(long)[strings.Index(long, "parseConfig")-40:strings.Index(long, "parseConfig")+80]) + "..."},
		{long, []string{"absent"}, string([]rune(long)[:120]) + "..."},
	}
	for _, c := range cases {
		if got := recallSnippet(c.text, c.words, 120); got != c.want {
			t.Errorf("recallSnippet(%.30q, %v) =\n%q\nwant\n%q", c.text, c.words, got, c.want)
		}
	}
}

// TestRecallFilters: the recall tool's filters, through Store.Recall.
func TestRecallFilters(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, filepath.Join(t.TempDir(), "m.db"))
	at := func(ts string) { tm, _ := time.Parse(TimeLayout, ts); s.now = func() time.Time { return tm } }
	must := func(_ any, err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	at("2026-01-05T09:00:00Z")
	must(s.Append(ctx, "20260105T090000Z-0001@alice", "decision", "use SQLite for the cache")) // 1
	at("2026-01-06T09:00:00Z")
	must(s.Append(ctx, "20260106T090000Z-0002@bob", "bug", "the cache expired too early")) // 2
	at("2026-01-07T09:00:00Z")
	must(s.Append(ctx, "20260107T090000Z-0003", "note", "cache hit ratio is 93%")) // 3
	must(s.Checkpoint(ctx, "20260107T090000Z-0003", "cache settled"))              // c1
	ids := func(opt RecallOptions) string {
		t.Helper()
		opt.Query = "cache"
		r, err := s.Recall(ctx, opt)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, line := range strings.Split(r.Text, "\n")[1:] {
			if id, _, ok := strings.Cut(line, ","); ok && !strings.HasPrefix(line, "#") {
				out = append(out, id)
			}
		}
		slices.Sort(out)
		return strings.Join(out, " ")
	}
	day := func(d string) time.Time { tm, _ := time.Parse("2006-01-02", d); return tm }
	cases := []struct {
		name string
		opt  RecallOptions
		want string
	}{
		{"all", RecallOptions{}, "1 2 3 c1"},
		{"since", RecallOptions{Since: day("2026-01-06")}, "2 3 c1"},
		{"until", RecallOptions{Until: day("2026-01-06")}, "1"},
		{"range", RecallOptions{Since: day("2026-01-06"), Until: day("2026-01-07")}, "2"},
		{"kinds", RecallOptions{Kinds: []string{" bug ", "", "note"}}, "2 3"},
		{"checkpoints", RecallOptions{Kinds: []string{"checkpoint"}}, "c1"},
		{"agent", RecallOptions{Agent: "alice"}, "1"},
		{"agent and kind", RecallOptions{Agent: "alice", Kinds: []string{"bug"}}, ""},
		{"limit", RecallOptions{Limit: 1, Kinds: []string{"decision"}}, "1"},
	}
	for _, c := range cases {
		if got := ids(c.opt); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
