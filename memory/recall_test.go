package memory

import (
	"context"
	"encoding/csv"
	"errors"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestRecallQuery(t *testing.T) {
	cases := []struct{ in, want string }{
		{"login cookie", `"login" OR "cookie"`},
		{`"session cookie" expired`, `"session cookie" OR "expired"`},
		{"cach* max_update_rows", `"cach"* OR "max_update_rows"`},
		{`"max-ev"* x`, `"max-ev"* OR "x"`},
		{"a AND b OR NOT c NEAR d", `"a" OR "b" OR "c" OR "d"`},
		{`say "hi`, `"say" OR "hi"`},                        // an unclosed quote runs to the end
		{`it"s`, `"it" OR "s"`},                             // a quote inside a word starts a phrase
		{"(kind:decision) -x", `"(kind:decision)" OR "-x"`}, // punctuation is quoted, never syntax
		{"café", `"café"`},
		{"a\x00b", `"a" OR "b"`},         // a NUL separates words
		{"\"a\x00b\" c", `"a b" OR "c"`}, // also inside a phrase
		{"w* w* w* x w*", `"w"* OR "x"`}, // the same term is searched once
		{"\xff\xfe ok", `"ok"`},          // bytes that are not UTF-8 are no word
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := RecallQuery(c.in)
			if err != nil || got != c.want {
				t.Fatalf("RecallQuery(%q) = %q, %v; want %q", c.in, got, err, c.want)
			}
		})
	}
	for _, in := range []string{"", "   ", "AND OR", `"" * -- ()`, "\x00", "\x00\x00 \x00"} {
		if _, err := RecallQuery(in); !errors.Is(err, ErrEmptyQuery) {
			t.Errorf("RecallQuery(%q): %v, want ErrEmptyQuery", in, err)
		}
	}
	words := func(n int) string {
		var b strings.Builder
		for i := range n {
			b.WriteString("w" + strconv.Itoa(i) + "* ")
		}
		return b.String()
	}
	bounds := []struct {
		in   string
		want error
	}{
		{words(MaxRecallTerms), nil},
		{words(MaxRecallTerms + 1), ErrTooManyTerms},
		{`"` + words(MaxRecallTerms+1) + `"`, ErrTooManyTerms}, // a phrase's words each count
		{strings.Repeat("w* ", 1000), nil},                     // one term, repeated
	}
	for _, b := range bounds {
		if _, err := RecallQuery(b.in); !errors.Is(err, b.want) {
			t.Errorf("RecallQuery(%.40q...): %v, want %v", b.in, err, b.want)
		}
	}
}

// FuzzRecallQuery: no query string gives an expression FTS5 cannot parse
// (SPEC 5.4: a match or INVALID_ARGUMENT, never a database error). The
// seeds run as a unit test; go test -fuzz FuzzRecallQuery explores.
func FuzzRecallQuery(f *testing.F) {
	for _, seed := range []string{"login cookie", "a\x00b", "\"a\x00", "w*", `"*"*`, "\"\"\"", "x\"*y", "NEAR(a b)", "a:b", "^a", "+a -b", "\xff\x80", "\u2028 \u00e9*"} {
		f.Add(seed)
	}
	for c := 0; c < 256; c++ {
		f.Add(string([]byte{byte(c)}) + "a" + string([]byte{byte(c)}) + "*")
	}
	s := openStore(f, filepath.Join(f.TempDir(), "m.db"))
	ctx := context.Background()
	if _, err := s.Append(ctx, "s", "note", "alpha beta_gamma café 42"); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, q string) {
		match, err := RecallQuery(q)
		if errors.Is(err, ErrEmptyQuery) || errors.Is(err, ErrTooManyTerms) {
			return
		}
		if err != nil {
			t.Fatalf("RecallQuery(%q): %v", q, err)
		}
		var n int
		if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM memory_events_fts WHERE memory_events_fts MATCH ?`, match).Scan(&n); err != nil {
			t.Fatalf("RecallQuery(%q) = %q: FTS5 refused it: %v", q, match, err)
		}
		if match, err = recallMatch(q); err != nil {
			t.Fatalf("recallMatch(%q): %v", q, err)
		}
		if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM memory_recall WHERE memory_recall MATCH ?`, match).Scan(&n); err != nil {
			t.Fatalf("recallMatch(%q) = %q: FTS5 refused it: %v", q, match, err)
		}
	})
}

// TestRecallBudget: the recall's statements run under the budget; when it
// is spent the answer is a *RecallTimeoutError (the server's TIMEOUT), not
// a partial recall or a database error.
func TestRecallBudget(t *testing.T) {
	t.Parallel()
	s := openStore(t, filepath.Join(t.TempDir(), "m.db"))
	ctx := context.Background()
	for _, c := range []string{"alpha one", "beta two", "alpha three"} {
		if _, err := s.Append(ctx, "s", "note", c); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		budget  time.Duration
		timeout bool
	}{
		{0, false},
		{time.Minute, false},
		{time.Nanosecond, true}, // spent before the first step
	}
	for _, c := range cases {
		r, err := s.ResumeContext(ctx, ResumeOptions{MaxEvents: 1, Query: "alpha", RecallTimeout: c.budget})
		var te *RecallTimeoutError
		switch {
		case c.timeout && (!errors.As(err, &te) || te.Budget != c.budget):
			t.Errorf("budget %v: %v, want a RecallTimeoutError", c.budget, err)
		case !c.timeout && (err != nil || r.Matched != 1):
			t.Errorf("budget %v: %v, matched %d, want 1", c.budget, err, r.Matched)
		}
	}
}

// recallSection returns the CSV records of the recall section of a resume
// text, header row first, and the section's first line.
func recallSectionOf(t *testing.T, text string) (string, [][]string) {
	t.Helper()
	i := strings.Index(text, "\n# recall: no older events match")
	if i < 0 {
		i = strings.Index(text, "\n# recall: unavailable")
	}
	if i >= 0 {
		return text[i+1:], nil
	}
	i = strings.Index(text, " older events match the query")
	if i < 0 {
		t.Fatalf("no recall section in:\n%s", text)
	}
	i = strings.LastIndex(text[:i], "\n") + 1
	head, body, _ := strings.Cut(text[i:], "\n")
	var lines []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, "# ") {
			break
		}
		lines = append(lines, l)
	}
	recs, err := csv.NewReader(strings.NewReader(strings.Join(lines, "\n"))).ReadAll()
	if err != nil {
		t.Fatalf("recall CSV: %v\n%s", err, body)
	}
	return head, recs
}

func TestResumeRecall(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, filepath.Join(t.TempDir(), "m.db"))
	fixedClock(s, time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	add := func(kind, content string) int64 {
		t.Helper()
		e, err := s.Append(ctx, "s", kind, content)
		if err != nil {
			t.Fatal(err)
		}
		return e.ID
	}
	old := add("decision", "login bug: the session cookie expired after 5 minutes; set the cookie max-age to 1 day")
	oldTodo := add("todo", "check the cookie banner text")
	add("note", "unrelated: renamed the build target")
	if _, err := s.Checkpoint(ctx, "s", "auth works again"); err != nil {
		t.Fatal(err)
	}
	var recent []int64
	for i := range 6 {
		// Letters from b: "a" is a function word, which the pairs leave
		// out, and that row's length would differ (no tie).
		recent = append(recent, add("note", "ran the test suite again, run "+string(rune('b'+i))))
	}
	recentCookie := add("note", "a cookie recipe someone pasted")

	r, err := s.ResumeContext(ctx, ResumeOptions{MaxEvents: 3, Query: "login cookie"})
	if err != nil {
		t.Fatal(err)
	}
	head, recs := recallSectionOf(t, r.Text)
	if len(recs) < 2 || !slices.Equal(recs[0], []string{"id", "ts", "kind", "content", "score"}) {
		t.Fatalf("recall section %q %q in:\n%s", head, recs, r.Text)
	}
	var ids []string
	for _, rec := range recs[1:] {
		ids = append(ids, rec[0])
	}
	// The relevant old event first; the recent cookie event is among the
	// three recent ones shown and is not repeated.
	if ids[0] != itoa(old) || slices.Contains(ids, itoa(recentCookie)) || !slices.Contains(ids, itoa(oldTodo)) {
		t.Fatalf("recalled %v (old %d, recent %d) in:\n%s", ids, old, recentCookie, r.Text)
	}
	if r.Matched != 2 || r.Recalled != 2 || !strings.HasPrefix(head, "# recall: 2 older events match the query |") {
		t.Fatalf("matched %d recalled %d head %q", r.Matched, r.Recalled, head)
	}
	if !strings.Contains(r.Text, "# 7 events since checkpoint, showing the most recent 3 | chain ok (10 events)") {
		t.Fatalf("recent part changed:\n%s", r.Text)
	}
	_ = recent

	// Kinds left out apply to recall too; max_events caps it.
	r, err = s.ResumeContext(ctx, ResumeOptions{MaxEvents: 1, Query: "cookie", ExcludeKinds: []string{"todo"}})
	if err != nil {
		t.Fatal(err)
	}
	head, recs = recallSectionOf(t, r.Text)
	if len(recs) != 2 || recs[1][0] != itoa(old) || !strings.Contains(head, "# recall: 1 older events match the query") {
		t.Fatalf("excluded/limited recall: %q %q\n%s", head, recs, r.Text)
	}

	// Ties: equal scores, newest first.
	r, err = s.ResumeContext(ctx, ResumeOptions{MaxEvents: 1, Query: "suite"})
	if err != nil {
		t.Fatal(err)
	}
	_, recs = recallSectionOf(t, r.Text)
	if len(recs) != 2 || recs[1][0] != itoa(recent[5]) {
		t.Fatalf("tie order: %q", recs)
	}

	// Nothing matches.
	r, err = s.ResumeContext(ctx, ResumeOptions{Query: "zeppelin"})
	if err != nil || !strings.HasSuffix(r.Text, "\n\n# recall: no older events match the query (recall index memory_recall)") {
		t.Fatalf("no match: %v\n%s", err, r.Text)
	}
	// A query of no words.
	if _, err := s.ResumeContext(ctx, ResumeOptions{Query: " -- "}); !errors.Is(err, ErrEmptyQuery) {
		t.Fatalf("empty query: %v", err)
	}
	// Without a query the answer is what it always was.
	plain, err := s.ResumeContext(ctx, ResumeOptions{MaxEvents: 3})
	if err != nil || strings.Contains(plain.Text, "match the query") {
		t.Fatalf("plain: %v\n%s", err, plain.Text)
	}
}

func TestResumeRecallByteCap(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, filepath.Join(t.TempDir(), "m.db"))
	long := strings.Repeat("cookie words ", 40) // ~520 bytes a row
	for range 10 {
		if _, err := s.Append(ctx, "s", "note", long); err != nil {
			t.Fatal(err)
		}
	}
	for range 10 {
		if _, err := s.Append(ctx, "s", "note", strings.Repeat("recent filler ", 40)); err != nil {
			t.Fatal(err)
		}
	}
	const capBytes = 3000
	r, err := s.ResumeContext(ctx, ResumeOptions{MaxEvents: 10, Query: "cookie", MaxBytes: capBytes})
	if err != nil {
		t.Fatal(err)
	}
	// Both CSV sections together stay under the cap, and each gets rows.
	csvBytes := 0
	for _, l := range strings.Split(r.Text, "\n") {
		if l != "" && !strings.HasPrefix(l, "# ") {
			csvBytes += len(l) + 1
		}
	}
	if csvBytes > capBytes || r.Shown == 0 || r.Recalled == 0 || r.Recalled == 10 {
		t.Fatalf("csv %d bytes (cap %d), shown %d, recalled %d:\n%s", csvBytes, capBytes, r.Shown, r.Recalled, r.Text)
	}
	if !strings.Contains(r.Text, "less relevant matches left out to fit 3000 bytes") {
		t.Fatalf("no cut line:\n%s", r.Text)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
