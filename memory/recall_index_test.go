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

func TestRecallPairs(t *testing.T) {
	cases := []struct{ in, want string }{
		{"word", ""},
		{"the HTTP cache key", "http_cache cache_key"},                                           // no pair with "the"
		{"httpCacheKey", "http_cache cache_key"},                                                 // an identifier's words pair as prose does
		{"cache-key, cache_key; Cache Key", "cache_key key_cache cache_key key_cache cache_key"}, // punctuation ignored, as in a phrase
		{"ran the migration on table orders_7; 42 rows", "table_orders orders_7 7_42 42_rows"},
		{"is_admin to_string", ""}, // every pair has a function word
		{"ÉmileDurand café", "émile_durand durand_café"},
		{"  --  ", ""},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			if got := recallPairs(c.in); got != c.want {
				t.Fatalf("recallPairs(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

func TestRecallMatch(t *testing.T) {
	cases := []struct{ in, want string }{
		{"login cookie", `"login" OR "cookie" OR "login_cookie"`}, // adjacent words also as their pair
		{"parse config", `"parse" OR "config" OR "parse_config"`},
		{"parseConfig", `"parseConfig" OR "parse_config"`}, // its pair, not the phrase "parse config": the word "orders" of orders_7 may be in every event
		{"orders_7", `"orders_7" OR "orders7"`},            // the pair orders_7 is the identifier itself
		{"cache_key etags", `"cache_key" OR "etags" OR "cachekey" OR "key_etags"`},
		{"HTTPServer", `"HTTPServer" OR "http_server"`},
		{"max_update_rows", `"max_update_rows" OR "max_update update_rows" OR "maxupdaterows"`}, // a phrase of its pairs
		{"is_admin", `"is_admin" OR "is admin" OR "isadmin"`},                                   // a pair with a function word is not indexed: the words as a phrase
		{"the login", `"the" OR "login"`},
		{"a_b_c_d_e_f_g_h_i", `"a_b_c_d_e_f_g_h_i" OR "abcdefghi"`},                          // no phrase of more than 8 words
		{"parseConfig parse_config", `"parseConfig" OR "parse_config" OR "config_parse"`},    // a form already asked for (case aside) is not repeated
		{`"parseConfig failed" parseCo* now`, `"parseConfig failed" OR "parseCo"* OR "now"`}, // phrases and prefixes as written, and not paired
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

// TestRecallIdentifierFindsProse: a query identifier finds the prose that
// spells its words, through the pairs column (recallPairs), also when the
// identifier is written in another case style; an identifier with a
// function word in it is searched by its words as a phrase.
func TestRecallIdentifierFindsProse(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, filepath.Join(t.TempDir(), "m.db"))
	for _, text := range []string{
		"the HTTP cache key is the account id",       // 1
		"max update rows is 500 for the batch job",   // 2
		"the page checks is admin before the delete", // 3
		"fixed parseConfig on empty files",           // 4
		"ran the migration on orders 7 again",        // 5
		"orders were 7 and keys were cached",         // 6: the words, apart
	} {
		if _, err := s.Append(ctx, "s", "note", text); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		query string
		want  []string // ids, best first
	}{
		{"cache_key", []string{"1"}},
		{"cacheKey", []string{"1"}},
		{"cache-key", []string{"1"}},
		{"max_update_rows", []string{"2"}},
		{"maxUpdateRows", []string{"2"}},
		{"is_admin", []string{"3"}},
		{"parse_config", []string{"4"}},
		{"orders_7", []string{"5"}},
		{"orders 7", []string{"5", "6"}}, // the words: both rows, the one that says them together first
	}
	for _, c := range cases {
		t.Run(c.query, func(t *testing.T) {
			r, err := s.Recall(ctx, RecallOptions{Query: c.query})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, line := range strings.Split(r.Text, "\n")[1:] {
				if id, _, ok := strings.Cut(line, ","); ok && !strings.HasPrefix(line, "#") {
					got = append(got, id)
				}
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("recall %q: %v, want %v\n%s", c.query, got, c.want, r.Text)
			}
		})
	}
}

// TestRecallIndexUpgradesEarlierForm: a recall index written by an
// earlier version (body and kind, no pairs) is dropped at start and built
// again, so that its rows have their pairs; nothing else in the file
// changes.
func TestRecallIndexUpgradesEarlierForm(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	s := openStore(t, path)
	e1, err := s.Append(ctx, "s", "note", "the HTTP cache key is the account id")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Checkpoint(ctx, "s", "cache key settled"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	db := rawDB(t, path)
	mustExec(t, db, `DROP TABLE memory_recall`)
	mustExec(t, db, `CREATE VIRTUAL TABLE memory_recall USING fts5(body, kind, content='', tokenize="porter unicode61 remove_diacritics 2 tokenchars '_'")`)
	mustExec(t, db, `INSERT INTO memory_recall(rowid, body, kind) VALUES (?, ?, 'note'), (-1, 'cache key settled', 'checkpoint')`, e1.ID, recallText(e1.Content))
	e2 := appendLikeReference(t, db, "2026-02-01T10:00:00Z", "20260201T100000Z-cafe", "decision", "the cache key gets a version prefix")
	others := func() []string {
		var out []string
		for _, row := range masterRows(t, db) {
			if !strings.Contains(row, "|memory_recall") {
				out = append(out, row)
			}
		}
		return out
	}
	before := others()

	s2 := openStore(t, path)
	if after := others(); !slices.Equal(before, after) {
		t.Fatalf("the start changed other objects:\nbefore %q\nafter  %q", before, after)
	}
	var pairs, docs int
	if err := db.QueryRow(`SELECT (SELECT count(*) FROM pragma_table_xinfo('memory_recall') WHERE name = 'pairs'), (SELECT count(*) FROM memory_recall_docsize)`).Scan(&pairs, &docs); err != nil {
		t.Fatal(err)
	}
	if pairs != 1 || docs != 3 {
		t.Fatalf("after the start: pairs column %d, %d rows indexed; want 1 and 3 (two events, a checkpoint)", pairs, docs)
	}
	if got := matchIDs(t, db, `SELECT rowid FROM memory_recall WHERE memory_recall MATCH 'pairs:cache_key' ORDER BY rowid`); !slices.Equal(got, []int64{-1, e1.ID, e2}) {
		t.Fatalf("rows with the pair cache_key: %v", got)
	}
	r, err := s2.Recall(ctx, RecallOptions{Query: "cache_key"})
	if err != nil || r.Matched != 3 {
		t.Fatalf("recall cache_key after the upgrade: %d matches, %v\n%s", r.Matched, err, r.Text)
	}
	s2.Close()
	// A second start finds the current form and leaves it alone.
	rows := masterRows(t, db)
	openStore(t, path)
	if again := masterRows(t, db); !slices.Equal(rows, again) {
		t.Fatalf("a second start changed the schema:\nbefore %q\nafter  %q", rows, again)
	}
	mustExec(t, db, `INSERT INTO memory_recall(memory_recall, rank) VALUES('integrity-check', 0)`)
}
