package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/render"
)

// DefaultRecallLimit is the recall tool's default limit.
const DefaultRecallLimit = 10

// recallSnippetChars is how much of a text the recall tool shows around
// its first hit.
const recallSnippetChars = 160

// RecallOptions are the recall tool's arguments and the caps that apply.
type RecallOptions struct {
	// Query is read as RecallQuery reads it; the recall index is searched
	// with the terms' stems and identifier parts (recallMatch).
	Query string
	// Limit is how many events and checkpoints to show, best first; below
	// 1 means DefaultRecallLimit.
	Limit int
	// Since and Until bound ts (Since inclusive, Until exclusive); zero
	// values leave that end open. ParseRecallTime reads the tool's forms.
	Since, Until time.Time
	// Kinds keeps only these kinds (stripped; empty ones ignored);
	// "checkpoint" keeps checkpoint summaries. Empty: every kind.
	Kinds []string
	// Agent keeps only what this HTTP agent wrote (AgentOf). Empty: all.
	Agent string
	// MaxBytes caps the CSV (header included); the least relevant rows are
	// left out first. MaxCellChars cuts longer cells. 0: no cap, no cut.
	MaxBytes, MaxCellChars int
	// Timeout, when above 0, is the budget of the recall's statements
	// (--query-timeout): a *RecallTimeoutError when it runs out.
	Timeout time.Duration
}

// Recalled is a recall tool answer.
type Recalled struct {
	// Text is the answer: CSV id,ts,kind,agent,score,snippet and a trailer
	// line, no trailing newline.
	Text string
	// Matched is how many events and checkpoints match (filters applied),
	// Shown how many rows Text holds.
	Matched, Shown int
	// Kinds is the cleaned Kinds (for the audit detail).
	Kinds []string
	// IndexLag is how many rows the index still lacks while a background
	// catch-up runs (0 otherwise).
	IndexLag int64
}

// recallHit is one ranked row of the recall index: an event, or a
// checkpoint (ID is then the checkpoint's id and Checkpoint true).
type recallHit struct {
	Event
	Checkpoint bool
	Score      float64
}

// recallFilter narrows a ranking of the recall index.
type recallFilter struct {
	checkpoints     bool    // rank checkpoint summaries too
	notIDs          []int64 // events left out (those get_resume_context shows)
	kinds, notKinds []string
	since, until    time.Time
	agent           string
}

// where returns the conditions and arguments of f over the columns of
// recallRows (ts, session, kind).
func (f recallFilter) where() ([]string, []any) {
	var conds []string
	var args []any
	if !f.checkpoints {
		conds = append(conds, "m.rowid > 0")
	}
	if len(f.notIDs) > 0 {
		ids := make([]string, len(f.notIDs))
		for i, id := range f.notIDs {
			ids[i] = strconv.FormatInt(id, 10)
		}
		conds = append(conds, "m.rowid NOT IN (SELECT value FROM json_each(?))")
		args = append(args, "["+strings.Join(ids, ",")+"]")
	}
	in := func(not string, kinds []string) {
		conds = append(conds, "x.kind "+not+"IN (?"+strings.Repeat(", ?", len(kinds)-1)+")")
		for _, k := range kinds {
			args = append(args, k)
		}
	}
	if len(f.kinds) > 0 {
		in("", f.kinds)
	}
	if len(f.notKinds) > 0 {
		in("NOT ", f.notKinds)
	}
	if !f.since.IsZero() {
		conds, args = append(conds, "x.ts >= ?"), append(args, f.since.UTC().Format(TimeLayout))
	}
	if !f.until.IsZero() {
		conds, args = append(conds, "x.ts < ?"), append(args, f.until.UTC().Format(TimeLayout))
	}
	if f.agent != "" {
		conds = append(conds, "instr(x.session, '@') > 0 AND substr(x.session, instr(x.session, '@') + 1) = ?")
		args = append(args, f.agent)
	}
	return conds, args
}

// filtered reports whether f needs the rows' columns (else the index alone
// is ranked and cut before any row is read).
func (f recallFilter) filtered() bool {
	return len(f.kinds)+len(f.notKinds) > 0 || !f.since.IsZero() || !f.until.IsZero() || f.agent != ""
}

// recallRows is the FROM of a ranking: each match of the recall index
// with its event (e) or checkpoint (c); the columns of x (recallColumns)
// are read from whichever it is.
const recallRows = ` FROM memory_recall m LEFT JOIN memory_events e ON m.rowid > 0 AND e.id = m.rowid
 LEFT JOIN memory_checkpoints c ON m.rowid < 0 AND c.id = -m.rowid WHERE memory_recall MATCH ?`

// recallColumns are the expressions behind x.ts, x.session, x.kind and
// x.text.
var recallColumns = strings.NewReplacer(
	"x.ts", "coalesce(e.ts, c.ts)",
	"x.session", "coalesce(e.session, c.session)",
	"x.kind", "coalesce(e.kind, 'checkpoint')",
	"x.text", "coalesce(e.content, c.summary)",
)

// rankRecall ranks the recall index for the FTS5 expression match under
// filter f inside tx: the limit best rows (bm25, ties newest first) and
// how many match in all.
func rankRecall(ctx context.Context, tx *sql.Tx, match string, f recallFilter, limit int) ([]recallHit, int, error) {
	conds, fargs := f.where()
	args := append([]any{match}, fargs...)
	cond := ""
	if len(conds) > 0 {
		cond = " AND " + strings.Join(conds, " AND ")
	}
	// A row of the index whose event or checkpoint is gone (a file
	// tampered with by hand) is not shown.
	const present = ` AND (e.id IS NOT NULL OR c.id IS NOT NULL)`
	var matched int
	var q string
	if f.filtered() {
		if err := tx.QueryRowContext(ctx, recallColumns.Replace(`SELECT count(*)`+recallRows+cond+present), args...).Scan(&matched); err != nil {
			return nil, 0, err
		}
		q = `SELECT m.rowid, x.ts, x.session, x.kind, x.text, -m.rank` + recallRows + cond + present + ` ORDER BY m.rank, x.ts DESC, m.rowid DESC LIMIT ?`
	} else {
		// Ranked and cut on the index alone, then joined: a word that
		// thousands of rows hold costs their bm25 scores, not thousands of
		// row reads and a sort of their texts.
		cond = strings.ReplaceAll(cond, "m.rowid", "rowid")
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM memory_recall WHERE memory_recall MATCH ?`+cond, args...).Scan(&matched); err != nil {
			return nil, 0, err
		}
		q = `SELECT m.id, x.ts, x.session, x.kind, x.text, -m.rank FROM (SELECT rowid AS id, rank FROM memory_recall WHERE memory_recall MATCH ?` + cond +
			` ORDER BY rank, rowid DESC LIMIT ?) AS m LEFT JOIN memory_events e ON m.id > 0 AND e.id = m.id
 LEFT JOIN memory_checkpoints c ON m.id < 0 AND c.id = -m.id WHERE 1` + present + ` ORDER BY m.rank, x.ts DESC, m.id DESC`
	}
	q = recallColumns.Replace(q)
	rows, err := tx.QueryContext(ctx, q, append(args, limit)...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var hits []recallHit
	for rows.Next() {
		var h recallHit
		if err := rows.Scan(&h.ID, &h.TS, &h.Session, &h.Kind, &h.Content, &h.Score); err != nil {
			return nil, 0, err
		}
		if h.ID < 0 {
			h.ID, h.Checkpoint = -h.ID, true
		}
		hits = append(hits, h)
	}
	return hits, matched, rows.Err()
}

// Recall ranks the events and checkpoint summaries that match the query,
// under the filters, and writes the recall tool's answer:
//
//	id,ts,kind,agent,score,snippet
//	42,2026-01-05T09:00:00Z,decision,,3.12,We decided to use SQLite instead of Postgres: ...
//	c7,2026-01-06T10:00:00Z,checkpoint,claude,2.40,...
//	# 2 of 5 matches | ranked by bm25 over stemmed words and identifier parts (memory_recall), ties newest first; score: higher is more relevant
//
// A checkpoint's id is "c" and its id in memory_checkpoints.
func (s *Store) Recall(ctx context.Context, opt RecallOptions) (_ Recalled, err error) {
	defer func() { err = markBusy(err) }()
	if opt.Limit < 1 {
		opt.Limit = DefaultRecallLimit
	}
	terms, err := recallTerms(opt.Query)
	if err != nil {
		return Recalled{}, err
	}
	match, err := recallMatch(opt.Query)
	if err != nil {
		return Recalled{}, err
	}
	var r Recalled
	for _, k := range opt.Kinds {
		if k = Strip(k); k != "" {
			r.Kinds = append(r.Kinds, k)
		}
	}
	if !s.fts {
		return Recalled{}, ErrNoRecallIndex
	}
	if s.catchUpSoon(ctx) {
		r.IndexLag, _ = s.indexLag(ctx)
	}
	f := recallFilter{checkpoints: true, kinds: r.Kinds, since: opt.Since, until: opt.Until, agent: opt.Agent}
	hits, matched, fused, err := s.rankFused(ctx, opt.Query, match, f, opt.Limit, opt.Timeout)
	if err != nil {
		return Recalled{}, err
	}
	r.Matched = matched
	csv, n := renderRecallHits(hits, recallWords(terms), opt.MaxBytes, opt.MaxCellChars)
	r.Shown = n
	var lines []string
	if r.IndexLag > 0 {
		lines = append(lines, fmt.Sprintf("# recall: the index is catching up in the background (%d rows to go), so the newest rows may not be ranked yet; search_text finds them now", r.IndexLag))
	}
	lines = append(lines, strings.TrimRight(string(csv), "\n"))
	trailer := fmt.Sprintf("# %d of %d matches", n, matched)
	if cut := len(hits) - n; cut > 0 {
		trailer += fmt.Sprintf(", %d less relevant left out to fit %d bytes", cut, opt.MaxBytes)
	} else if matched > n {
		trailer += " (raise limit to see more)"
	}
	if fused {
		trailer += " | ranked by bm25 over stemmed words and identifier parts (memory_recall), " + s.fusionNote() + "; score: bm25, higher is more relevant"
	} else {
		trailer += " | ranked by bm25 over stemmed words and identifier parts (memory_recall), ties newest first; score: higher is more relevant"
	}
	if filters := describeFilters(opt, r.Kinds); filters != "" {
		trailer += "; filters: " + filters
	}
	lines = append(lines, trailer)
	r.Text = strings.Join(lines, "\n")
	return r, nil
}

// ErrNoRecallIndex: the recall index could not be created (the server log
// says why).
var ErrNoRecallIndex = errors.New("recall is unavailable: the full-text index could not be created (see the server log)")

// rankFused is rankInTx in a read transaction of its own, under the
// budget (0: none). fused reports whether vectors took part.
func (s *Store) rankFused(ctx context.Context, query, match string, f recallFilter, limit int, budget time.Duration) (_ []recallHit, _ int, fused bool, _ error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, 0, false, err
	}
	defer func() { _ = tx.Rollback() }()
	hits, n, err := budgeted(ctx, budget, func(ctx context.Context) (hits []recallHit, n int, err error) {
		hits, n, fused, err = s.rankInTx(ctx, tx, query, match, f, limit)
		return hits, n, err
	})
	return hits, n, fused, err
}

// rankInTx is rankRecall inside tx, then, with an embedding model, the
// fusion of the best fusion.Depth word matches with their vectors
// (fuseRecall) in the same transaction, cut to limit: the ranking of the
// recall tool and of get_resume_context's recall section. fused reports
// whether vectors took part.
func (s *Store) rankInTx(ctx context.Context, tx *sql.Tx, query, match string, f recallFilter, limit int) (_ []recallHit, _ int, fused bool, _ error) {
	if s.emb == nil {
		hits, n, err := rankRecall(ctx, tx, match, f, limit)
		return hits, n, false, err
	}
	hits, n, err := rankRecall(ctx, tx, match, f, max(limit, s.fusion.Depth))
	if err == nil {
		hits, fused, err = s.fuseRecall(ctx, tx, query, hits)
	}
	if err != nil {
		return nil, 0, false, err
	}
	return hits[:min(len(hits), limit)], n, fused, nil
}

// fusionNote says how the word ranking was re-ranked with vectors, for a
// trailer or a header.
func (s *Store) fusionNote() string {
	return fmt.Sprintf("its best %d re-ranked with their embedding vectors' cosine to the query's (%s, reciprocal rank fusion, vector weight %g)", s.fusion.Depth, TableVectors, s.fusion.Weight)
}

// budgeted runs the recall's statements under the budget: the driver
// interrupts the statement running when its context ends
// (sqlite3_interrupt on this connection), and FTS5 stops. Over the budget
// is over it, also when the statement ended before the deadline's timer
// could interrupt it (a budget of a few ticks, a loaded machine): the
// answer does not depend on which came first.
func budgeted(ctx context.Context, budget time.Duration, run func(context.Context) ([]recallHit, int, error)) ([]recallHit, int, error) {
	rctx := ctx
	if budget > 0 {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(ctx, budget)
		defer cancel()
	}
	started := time.Now()
	hits, n, err := run(rctx)
	if ctx.Err() == nil && budget > 0 {
		if (err != nil && errors.Is(rctx.Err(), context.DeadlineExceeded)) || (err == nil && time.Since(started) > budget) {
			return nil, 0, &RecallTimeoutError{Budget: budget}
		}
	}
	return hits, n, err
}

// describeFilters says which filters narrowed a recall, for its trailer.
func describeFilters(opt RecallOptions, kinds []string) string {
	var out []string
	if !opt.Since.IsZero() {
		out = append(out, "since "+opt.Since.UTC().Format(TimeLayout))
	}
	if !opt.Until.IsZero() {
		out = append(out, "before "+opt.Until.UTC().Format(TimeLayout))
	}
	if len(kinds) > 0 {
		out = append(out, "kinds "+strings.Join(kinds, ","))
	}
	if opt.Agent != "" {
		out = append(out, "agent "+opt.Agent)
	}
	return strings.Join(out, ", ")
}

// renderRecallHits writes the CSV id,ts,kind,agent,score,snippet of hits
// (best first), the best that fit maxBytes (0: no cap; at least the
// header), and how many rows it wrote.
func renderRecallHits(hits []recallHit, words []string, maxBytes, maxCellChars int) ([]byte, int) {
	out := render.AppendRecord(nil, []string{"id", "ts", "kind", "agent", "score", "snippet"}, true)
	n := 0
	for _, h := range hits {
		id := strconv.FormatInt(h.ID, 10)
		if h.Checkpoint {
			id = "c" + id
		}
		line := render.AppendRecord(nil, []string{
			id, h.TS, cutCell(h.Kind, maxCellChars), AgentOf(h.Session),
			strconv.FormatFloat(h.Score, 'f', 2, 64), cutCell(recallSnippet(h.Content, words, recallSnippetChars), maxCellChars),
		}, false) // no agent (a stdio session) is an empty field, like NULL
		if maxBytes > 0 && len(out)+len(line) > maxBytes {
			break
		}
		out = append(out, line...)
		n++
	}
	return out, n
}

// recallWords are the lower-case words a snippet looks for: the query's
// words, their identifier parts, and for longer words a stem-like prefix
// (two thirds of the word), so that "paginating" shows "pagination".
func recallWords(terms []recallTerm) []string {
	var words []string
	for _, t := range terms {
		for _, w := range strings.FieldsFunc(strings.ToLower(t.text), func(r rune) bool { return !isTokenRune(r) }) {
			words = append(words, w)
			if n := utf8.RuneCountInString(w); n >= 6 {
				words = append(words, string([]rune(w)[:max(4, n*2/3)]))
			}
		}
		words = append(words, identParts(t.text, nil)...)
	}
	return words
}

// isTokenRune reports whether the index's tokenizer keeps r in a token: a
// letter, digit, '_' or private-use character.
func isTokenRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Co, r)
}

var lineBreaks = regexp.MustCompile(`\r\n|\r|\n`)

// recallSnippet is up to width characters of text around the first of
// words it holds (the start when none), newlines shown as ⏎ (as
// search_text shows them), "..." where cut.
func recallSnippet(text string, words []string, width int) string {
	text = lineBreaks.ReplaceAllString(text, "⏎")
	rs := []rune(text)
	if len(rs) <= width {
		return text
	}
	lower := []rune(strings.ToLower(text))
	at := -1
	if len(lower) == len(rs) {
		for _, w := range words {
			if i := runeIndex(lower, []rune(w)); i >= 0 && (at < 0 || i < at) {
				at = i
			}
		}
	}
	start := 0
	if at > width/3 {
		start = min(at-width/3, len(rs)-width)
	}
	end := min(start+width, len(rs))
	out := string(rs[start:end])
	if start > 0 {
		out = "..." + out
	}
	if end < len(rs) {
		out += "..."
	}
	return out
}

// runeIndex is the index of sub in s, in runes, or -1.
func runeIndex(s, sub []rune) int {
	if len(sub) == 0 {
		return -1
	}
	for i := 0; i+len(sub) <= len(s); i++ {
		if string(s[i:i+len(sub)]) == string(sub) {
			return i
		}
	}
	return -1
}

// durationForm is a recall time given as a duration back from now: a
// number and a unit, s m h d or w (7d, 12h, 2w), or a Go duration (1h30m).
var durationForm = regexp.MustCompile(`^(\d{1,6})([dw])$`)

// ParseRecallTime reads the recall tool's since and until: an ISO 8601
// date (2026-01-05: that day's start, or with end the next day's, so
// until=2026-01-05 includes that day), a date and time (2026-01-05T09:30,
// 2026-01-05T09:30:00Z, with an offset; without a zone UTC; with end the
// second after it), or a duration back from now (7d, 12h, 2w, 90m,
// 1h30m). "" is the zero time (no bound).
func ParseRecallTime(s string, now time.Time, end bool) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if m := durationForm.FindStringSubmatch(s); m != nil {
		n, _ := strconv.Atoi(m[1])
		days := n
		if m[2] == "w" {
			days *= 7
		}
		return now.AddDate(0, 0, -days).UTC(), nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d).UTC(), nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		if end {
			t = t.AddDate(0, 0, 1)
		}
		return t, nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04:05", "2006-01-02T15:04Z07:00", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04"} {
		if t, err := time.Parse(layout, s); err == nil {
			t = t.UTC().Truncate(time.Second)
			if end {
				t = t.Add(time.Second)
			}
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is neither an ISO 8601 date or time (2026-01-05, 2026-01-05T09:30:00Z) nor a duration back from now (7d, 12h, 2w, 90m)", s)
}
