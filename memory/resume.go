package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/render"
)

// DefaultMaxEvents is get_resume_context's default max_events.
const DefaultMaxEvents = 50

// ResumeOptions are the get_resume_context arguments and the caps that apply.
type ResumeOptions struct {
	// MaxEvents is how many of the newest events since the checkpoint to
	// show; below 1 means DefaultMaxEvents (the server validates the range).
	MaxEvents int
	// ExcludeKinds leaves out events of these kinds (stripped; empty ones
	// ignored). The "K events" count leaves them out too.
	ExcludeKinds []string
	// MaxBytes caps the CSV (header included, UTF-8 bytes): the oldest
	// events are dropped first and a line says so. 0 means no cap.
	MaxBytes int
	// MaxCellChars cuts longer cells to their first N characters plus
	// "...[+M chars]". 0 means no cut.
	MaxCellChars int
	// Query, when not empty, adds the older events most relevant to it
	// (see RecallQuery for how it is read), at most MaxEvents, ranked by
	// bm25 (fused with embedding vectors when the store has a model, as
	// the recall tool ranks), in a section of their own under the same
	// MaxBytes.
	Query string
	// RecallTimeout, when above 0, is the budget of the recall's
	// statements (the server's --query-timeout): they are interrupted when
	// it runs out and ResumeContext answers a *RecallTimeoutError.
	RecallTimeout time.Duration
	// Since, Until, Kinds and Agent narrow the recall section as they
	// narrow the recall tool (RecallOptions); the recent events are not
	// filtered by them.
	Since, Until time.Time
	Kinds        []string
	Agent        string
}

// Resume is a get_resume_context answer.
type Resume struct {
	// Text is the answer, no trailing newline.
	Text string
	// Checkpoint is the latest checkpoint (zero when HasCheckpoint is false).
	Checkpoint    Checkpoint
	HasCheckpoint bool
	// Anchored is false when the checkpoint's event no longer has the hash
	// it was written against.
	Anchored bool
	Chain    Verification
	// Total is the number of matching events since the checkpoint, Shown
	// how many are in Text, Dropped how many of those fetched the byte cap
	// removed.
	Total, Shown, Dropped int
	// Excluded is the cleaned ExcludeKinds (for the audit detail).
	Excluded []string
	// Matched is how many older events match Query, Recalled how many of
	// them are in Text.
	Matched, Recalled int
	// IndexLag is how many rows the full-text index still lacks while a
	// background catch-up runs (0 otherwise): those are not ranked yet.
	IndexLag int64
	// Fused reports whether the recall section was re-ranked with
	// embedding vectors (as the recall tool's ranking is, rankInTx).
	Fused bool
}

// ResumeContext builds the get_resume_context text (SPEC 5.2, as the
// reference writes it):
//
//	# checkpoint N | ts | session S | at event M
//	# WARNING: the checkpoint no longer matches the event it points at
//	summary
//
//	# K events since checkpoint, showing the most recent J | chain ok (N events)
//	id,ts,kind,content
//	...
//
// Without a checkpoint the first line is "# no checkpoint yet", no summary
// follows, and the count reads "# K events". The warning line appears only
// when the checkpoint is no longer anchored; ", showing ..." only when
// events were left out by MaxEvents; the CSV only when there are events.
// The chain is verified on every call.
func (s *Store) ResumeContext(ctx context.Context, opt ResumeOptions) (_ Resume, err error) {
	defer func() { err = markBusy(err) }()
	if opt.MaxEvents < 1 {
		opt.MaxEvents = DefaultMaxEvents
	}
	var r Resume
	for _, k := range opt.ExcludeKinds {
		if k = Strip(k); k != "" {
			r.Excluded = append(r.Excluded, k)
		}
	}
	var match string
	if opt.Query != "" {
		var err error
		if match, err = recallMatch(opt.Query); err != nil {
			return Resume{}, err
		}
		// Rows other programs appended since the last write: recall should
		// find them too (at once when they are few; a long backlog is
		// indexed in the background, and the answer says so).
		if s.catchUpSoon(ctx) {
			r.IndexLag, _ = s.indexLag(ctx)
		}
	}
	if r.Chain, err = s.Verify(ctx); err != nil {
		return Resume{}, err
	}
	var only []string
	for _, k := range opt.Kinds {
		if k = Strip(k); k != "" {
			only = append(only, k)
		}
	}
	filter := recallFilter{kinds: only, notKinds: r.Excluded, since: opt.Since, until: opt.Until, agent: opt.Agent}
	events, recalled, err := s.resumeRead(ctx, &r, opt.MaxEvents, opt.Query, match, filter, opt.RecallTimeout)
	var timeout *RecallTimeoutError
	if errors.As(err, &timeout) {
		return Resume{}, err
	}
	if err != nil {
		return Resume{}, fmt.Errorf("memory: resume context: %w", err)
	}

	var lines []string
	what := fmt.Sprintf("%d events", r.Total)
	if r.HasCheckpoint {
		c := r.Checkpoint
		lines = append(lines, fmt.Sprintf("# checkpoint %d | %s | session %s | at event %d", c.ID, c.TS, c.Session, c.LastEventID))
		if !r.Anchored {
			lines = append(lines, "# WARNING: the checkpoint no longer matches the event it points at")
		}
		lines = append(lines, c.Summary, "")
		what += " since checkpoint"
	} else {
		lines = append(lines, "# no checkpoint yet", "")
	}
	if r.Total > len(events) {
		what += fmt.Sprintf(", showing the most recent %d", len(events))
	}
	lines = append(lines, "# "+what+" | "+r.Chain.Summary())

	// With a query, the recall section keeps up to half the byte cap for
	// itself when it needs it; the recent events have the rest.
	recentCap := opt.MaxBytes
	var recallCSV []byte
	if len(recalled) > 0 {
		recallCSV, _ = renderRecall(recalled, 0, opt.MaxCellChars)
		if opt.MaxBytes > 0 {
			recentCap = opt.MaxBytes - min(len(recallCSV), opt.MaxBytes/2)
		}
	}
	used := 0
	if len(events) > 0 {
		csv, shown := renderEvents(events, recentCap, opt.MaxCellChars)
		used = len(csv)
		r.Shown, r.Dropped = shown, len(events)-shown
		lines = append(lines, strings.TrimRight(csv, "\n"))
		if r.Dropped > 0 {
			lines = append(lines, fmt.Sprintf("# %d older events dropped to fit %d bytes; read them with read_query on memory_events",
				r.Dropped, opt.MaxBytes))
		}
	}
	if opt.Query != "" {
		lines = append(lines, "")
		lines = append(lines, s.recallSection(&r, recalled, opt, used)...)
	}
	r.Text = strings.Join(lines, "\n")
	return r, nil
}

// recallSection writes the recall block: a header line, then CSV
// id,ts,kind,content,score, best first, within what the byte cap leaves
// after the recent events (used bytes).
func (s *Store) recallSection(r *Resume, recalled []recallEvent, opt ResumeOptions, used int) []string {
	if !s.fts {
		return []string{"# recall: unavailable, the full-text index could not be created (see the server log); search with search_text instead"}
	}
	var behind []string
	if r.IndexLag > 0 {
		behind = []string{fmt.Sprintf("# recall: the full-text index is catching up in the background (%d rows to go), so the newest of the older events may not be ranked yet; search_text finds them now", r.IndexLag)}
	}
	if len(recalled) == 0 {
		return append(behind, "# recall: no older events match the query (recall index memory_recall)")
	}
	limit := 0
	if opt.MaxBytes > 0 {
		limit = max(opt.MaxBytes-used, 1)
	}
	csv, n := renderRecall(recalled, limit, opt.MaxCellChars)
	r.Recalled = n
	head := fmt.Sprintf("# recall: %d older events match the query", r.Matched)
	if n < r.Matched {
		head += fmt.Sprintf(", showing the best %d", n)
	}
	if r.Fused {
		head += " | ranked by bm25, " + s.fusionNote() + "; score: bm25, higher is more relevant"
	} else {
		head += " | ranked by bm25, ties newest first; score: higher is more relevant"
	}
	out := append(behind, head)
	if n > 0 {
		out = append(out, strings.TrimRight(string(csv), "\n"))
	}
	if cut := len(recalled) - n; cut > 0 {
		out = append(out, fmt.Sprintf("# %d less relevant matches left out to fit %d bytes; query memory_events_fts with read_query for more", cut, opt.MaxBytes))
	}
	return out
}

// recallEvent is an event found by the query, with its bm25 score (FTS5's
// bm25() is lower for better matches; Score is its negation).
type recallEvent struct {
	Event
	Score float64
}

// renderRecall writes the CSV id,ts,kind,content,score of events (best
// first), the best that fit maxBytes (0: no cap; the header alone may not
// fit, then nothing is written), and how many it wrote.
func renderRecall(events []recallEvent, maxBytes, maxCellChars int) ([]byte, int) {
	out := render.AppendRecord(nil, []string{"id", "ts", "kind", "content", "score"}, true)
	if maxBytes > 0 && len(out) > maxBytes {
		return nil, 0
	}
	n := 0
	for _, e := range events {
		line := render.AppendRecord(nil, []string{
			strconv.FormatInt(e.ID, 10), cutCell(e.TS, maxCellChars), cutCell(e.Kind, maxCellChars),
			cutCell(e.Content, maxCellChars), strconv.FormatFloat(e.Score, 'f', 2, 64),
		}, true)
		if maxBytes > 0 && len(out)+len(line) > maxBytes {
			break
		}
		out = append(out, line...)
		n++
	}
	if n == 0 {
		return nil, 0
	}
	return out, n
}

// resumeRead reads the checkpoint, its anchoring and the events after it in
// one read transaction, newest limit first, and returns them oldest first.
// With a match expression it also returns, from the same snapshot, the
// limit best-ranked other events that match it (the query's, ranked as
// the recall tool ranks: fused with vectors when the store has a model).
// The recall runs within budget (0: none).
func (s *Store) resumeRead(ctx context.Context, r *Resume, limit int, query, match string, filter recallFilter, budget time.Duration) ([]Event, []recallEvent, error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true}) // plain BEGIN
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = tx.Rollback() }()

	if r.Checkpoint, r.HasCheckpoint, err = latestCheckpoint(ctx, tx); err != nil {
		return nil, nil, err
	}
	var since int64
	if r.HasCheckpoint {
		since = r.Checkpoint.LastEventID
		if r.Anchored, err = anchored(ctx, tx, r.Checkpoint); err != nil {
			return nil, nil, err
		}
	}

	// Only placeholders are built here; the kinds themselves are bound.
	clause := ""
	args := []any{since}
	if len(r.Excluded) > 0 {
		clause = " AND kind NOT IN (?" + strings.Repeat(", ?", len(r.Excluded)-1) + ")"
		for _, k := range r.Excluded {
			args = append(args, k)
		}
	}
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM memory_events WHERE id > ?"+clause, args...).Scan(&r.Total); err != nil {
		return nil, nil, err
	}
	rows, err := tx.QueryContext(ctx,
		"SELECT id, ts, session, kind, content FROM memory_events WHERE id > ?"+clause+" ORDER BY id DESC LIMIT ?",
		append(args, limit)...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var events []Event
	for rows.Next() {
		var e Event
		if err := rows.Scan(&e.ID, &e.TS, &e.Session, &e.Kind, &e.Content); err != nil {
			return nil, nil, err
		}
		events = append(events, e)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	for i, j := 0, len(events)-1; i < j; i, j = i+1, j-1 {
		events[i], events[j] = events[j], events[i]
	}
	if match == "" || !s.fts {
		return events, nil, nil
	}
	// Only the recall's own statements run under the budget (budgeted).
	for _, e := range events {
		filter.notIDs = append(filter.notIDs, e.ID)
	}
	hits, matched, err := budgeted(ctx, budget, func(ctx context.Context) (hits []recallHit, n int, err error) {
		hits, n, r.Fused, err = s.rankInTx(ctx, tx, query, match, filter, limit)
		return hits, n, err
	})
	if err != nil {
		return nil, nil, err
	}
	r.Matched = matched
	recalled := make([]recallEvent, len(hits))
	for i, h := range hits {
		recalled[i] = recallEvent{Event: h.Event, Score: h.Score}
	}
	return events, recalled, nil
}

// anchored reports whether the checkpoint's event still has the hash the
// checkpoint was written against.
func anchored(ctx context.Context, tx *sql.Tx, c Checkpoint) (bool, error) {
	if c.LastEventID == 0 {
		return c.HeadHash == GenesisHash, nil
	}
	var hash string
	err := tx.QueryRowContext(ctx, `SELECT hash FROM memory_events WHERE id = ?`, c.LastEventID).Scan(&hash)
	if err == sql.ErrNoRows {
		return false, nil
	}
	return err == nil && hash == c.HeadHash, err
}

// renderEvents writes the id,ts,kind,content CSV of events (oldest first).
// When they do not fit maxBytes, the newest that fit are kept (at least
// one), as the reference does; it returns how many were written.
func renderEvents(events []Event, maxBytes, maxCellChars int) (string, int) {
	// Events written over HTTP name their agent (AgentOf): then a last
	// column says who wrote each; a memory of stdio sessions only keeps
	// the reference's four columns.
	withAgent := false
	for _, e := range events {
		if AgentOf(e.Session) != "" {
			withAgent = true
			break
		}
	}
	cols := []string{"id", "ts", "kind", "content"}
	if withAgent {
		cols = append(cols, "agent")
	}
	header := render.AppendRecord(nil, cols, true)
	lines := make([][]byte, len(events))
	total := len(header)
	for i, e := range events {
		rec := []string{
			strconv.FormatInt(e.ID, 10), cutCell(e.TS, maxCellChars), cutCell(e.Kind, maxCellChars), cutCell(e.Content, maxCellChars),
		}
		if withAgent {
			rec = append(rec, AgentOf(e.Session))
		}
		lines[i] = render.AppendRecord(nil, rec, true)
		total += len(lines[i])
	}
	first := 0
	if maxBytes > 0 && total > maxBytes && len(events) > 1 {
		size := len(header)
		first = len(events)
		for first > 0 && (first == len(events) || size+len(lines[first-1]) <= maxBytes) {
			first--
			size += len(lines[first])
		}
	}
	out := header
	for _, l := range lines[first:] {
		out = append(out, l...)
	}
	return string(out), len(events) - first
}

// cutCell shortens s to limit characters plus "...[+M chars]" (0: no cut).
func cutCell(s string, limit int) string {
	if limit <= 0 {
		return s
	}
	n := utf8.RuneCountInString(s)
	if n <= limit {
		return s
	}
	i, k := 0, 0
	for k < limit {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		k++
	}
	return s[:i] + "...[+" + strconv.Itoa(n-limit) + " chars]"
}
