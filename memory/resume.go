package memory

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
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
	if r.Chain, err = s.Verify(ctx); err != nil {
		return Resume{}, err
	}
	events, err := s.resumeRead(ctx, &r, opt.MaxEvents)
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

	if len(events) > 0 {
		csv, shown := renderEvents(events, opt.MaxBytes, opt.MaxCellChars)
		r.Shown, r.Dropped = shown, len(events)-shown
		lines = append(lines, strings.TrimRight(csv, "\n"))
		if r.Dropped > 0 {
			lines = append(lines, fmt.Sprintf("# %d older events dropped to fit %d bytes; read them with read_query on memory_events",
				r.Dropped, opt.MaxBytes))
		}
	}
	r.Text = strings.Join(lines, "\n")
	return r, nil
}

// resumeRead reads the checkpoint, its anchoring and the events after it in
// one read transaction, newest limit first, and returns them oldest first.
func (s *Store) resumeRead(ctx context.Context, r *Resume, limit int) ([]Event, error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true}) // plain BEGIN
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback() }()

	if r.Checkpoint, r.HasCheckpoint, err = latestCheckpoint(ctx, tx); err != nil {
		return nil, err
	}
	var since int64
	if r.HasCheckpoint {
		since = r.Checkpoint.LastEventID
		if r.Anchored, err = anchored(ctx, tx, r.Checkpoint); err != nil {
			return nil, err
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
		return nil, err
	}
	rows, err := tx.QueryContext(ctx,
		"SELECT id, ts, kind, content FROM memory_events WHERE id > ?"+clause+" ORDER BY id DESC LIMIT ?",
		append(args, limit)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var events []Event
	for rows.Next() {
		var e Event
		if err := rows.Scan(&e.ID, &e.TS, &e.Kind, &e.Content); err != nil {
			return nil, err
		}
		events = append(events, e)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i, j := 0, len(events)-1; i < j; i, j = i+1, j-1 {
		events[i], events[j] = events[j], events[i]
	}
	return events, nil
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
	header := render.AppendRecord(nil, []string{"id", "ts", "kind", "content"}, true)
	lines := make([][]byte, len(events))
	total := len(header)
	for i, e := range events {
		lines[i] = render.AppendRecord(nil, []string{
			strconv.FormatInt(e.ID, 10), cutCell(e.TS, maxCellChars), cutCell(e.Kind, maxCellChars), cutCell(e.Content, maxCellChars),
		}, true)
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
