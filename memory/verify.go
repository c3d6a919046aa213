package memory

import (
	"context"
	"crypto/sha256"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Verification is the result of recomputing the chain.
type Verification struct {
	OK bool
	// Events is the number of rows in memory_events (all of them, also
	// when the chain breaks early).
	Events int64
	// HeadID and HeadHash are the last event verified good: 0 and
	// GenesisHash for an empty chain or a break at the first event, as in
	// the reference server.
	HeadID   int64
	HeadHash string
	// BreakAtID and Reason name the first bad event when !OK.
	BreakAtID int64
	Reason    string
}

// The reasons, word for word those of the reference server.
const (
	reasonGapFmt  = "id gap: expected event %d, found %d (rows were deleted or renumbered)"
	reasonPrevFmt = "prev_hash does not match the hash of event %d"
	reasonHash    = "stored hash does not match the recomputed hash (content or metadata was altered)"
)

// JSON returns the verify_chain text, as Python's json.dumps writes the
// reference's result: {"ok": true, "events": N, "head_id": N, "head_hash":
// "..."}, plus "break_at_id" and "reason" when broken.
func (v Verification) JSON() string {
	b := make([]byte, 0, 160+len(v.Reason))
	b = append(b, `{"ok": `...)
	b = strconv.AppendBool(b, v.OK)
	b = append(b, `, "events": `...)
	b = strconv.AppendInt(b, v.Events, 10)
	b = append(b, `, "head_id": `...)
	b = strconv.AppendInt(b, v.HeadID, 10)
	b = append(b, `, "head_hash": `...)
	b = appendJSONString(b, v.HeadHash, true)
	if !v.OK {
		b = append(b, `, "break_at_id": `...)
		b = strconv.AppendInt(b, v.BreakAtID, 10)
		b = append(b, `, "reason": `...)
		b = appendJSONString(b, v.Reason, true)
	}
	return string(append(b, '}'))
}

// Summary is the chain status of the get_resume_context header:
// "chain ok (N events)" or "chain BROKEN at event I: reason".
func (v Verification) Summary() string {
	if v.OK {
		return fmt.Sprintf("chain ok (%d events)", v.Events)
	}
	return fmt.Sprintf("chain BROKEN at event %d: %s", v.BreakAtID, v.Reason)
}

// Verify recomputes the whole chain in one read transaction (a consistent
// snapshot while appends go on): ids must run 1, 2, 3, ... without gaps,
// each prev_hash must be the previous event's hash (GenesisHash first), and
// each stored hash must equal the recomputed one. The first failure is
// reported; a broken chain is not an error.
//
// It talks to the driver directly (sql.Conn.Raw) and reuses its buffers:
// this is the hot path of verify_chain and every get_resume_context.
func (s *Store) Verify(ctx context.Context) (Verification, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return Verification{}, fmt.Errorf("memory: verify: %w", err)
	}
	defer conn.Close()
	var v Verification
	err = conn.Raw(func(dc any) error {
		var err error
		v, err = verifyDriver(ctx, dc)
		return err
	})
	if err != nil {
		return Verification{}, fmt.Errorf("memory: verify: %w", err)
	}
	return v, nil
}

func verifyDriver(ctx context.Context, dc any) (v Verification, err error) {
	ex, ok1 := dc.(driver.ExecerContext)
	q, ok2 := dc.(driver.QueryerContext)
	if !ok1 || !ok2 {
		return v, fmt.Errorf("driver connection %T cannot query", dc)
	}
	// A deferred (read) transaction: the scan and the count see one snapshot.
	if _, err := ex.ExecContext(ctx, "BEGIN", nil); err != nil {
		return v, err
	}
	defer func() {
		if _, rerr := ex.ExecContext(context.WithoutCancel(ctx), "ROLLBACK", nil); rerr != nil && err == nil {
			err = rerr
		}
	}()
	rows, err := q.QueryContext(ctx,
		`SELECT id, ts, session, kind, content, prev_hash, hash FROM memory_events ORDER BY id`, nil)
	if err != nil {
		return v, err
	}
	v, err = scanChain(rows)
	if cerr := rows.Close(); err == nil {
		err = cerr
	}
	if err != nil || v.OK {
		return v, err
	}
	// Broken: the scan stopped early; count every row as the reference does.
	crows, err := q.QueryContext(ctx, `SELECT count(*) FROM memory_events`, nil)
	if err != nil {
		return v, err
	}
	defer crows.Close()
	dest := make([]driver.Value, 1)
	if err := crows.Next(dest); err != nil {
		return v, err
	}
	n, _ := dest[0].(int64)
	v.Events = n
	return v, nil
}

// row is one memory_events row as read; text is false when a field was not
// TEXT (a BLOB or number put there by tampering must not verify).
type row struct {
	Event
	text bool
}

// scanChain checks the rows in order and stops at the first break. One
// reused canonical buffer; the strings the driver returns are kept as they
// are (no copies).
func scanChain(rows driver.Rows) (Verification, error) {
	v := Verification{OK: true, HeadHash: GenesisHash}
	dest := make([]driver.Value, 7)
	buf := make([]byte, 0, 1024)
	var r row
	fields := [...]*string{&r.TS, &r.Session, &r.Kind, &r.Content, &r.PrevHash, &r.Hash}
	for {
		err := rows.Next(dest)
		if errors.Is(err, io.EOF) {
			return v, nil
		}
		if err != nil {
			return v, err
		}
		r.ID, _ = dest[0].(int64)
		r.text = true
		for i, f := range fields {
			switch x := dest[i+1].(type) {
			case string:
				*f = x
			case []byte:
				*f, r.text = string(x), false
			default:
				*f, r.text = fmt.Sprint(x), false
			}
		}
		if reason := check(&r, v.HeadID+1, v.HeadHash, &buf); reason != "" {
			v.OK, v.BreakAtID, v.Reason = false, r.ID, reason
			return v, nil
		}
		v.Events, v.HeadID, v.HeadHash = r.ID, r.ID, r.Hash
	}
}

// check verifies one row against the expected id and prev_hash; it returns
// the reason of a break, or "".
func check(r *row, expected int64, prev string, buf *[]byte) string {
	switch {
	case r.ID != expected:
		return fmt.Sprintf(reasonGapFmt, expected, r.ID)
	case r.PrevHash != prev:
		return fmt.Sprintf(reasonPrevFmt, r.ID-1)
	}
	*buf = appendCanonical((*buf)[:0], r.ID, r.TS, r.Session, r.Kind, r.Content, r.PrevHash)
	sum := sha256.Sum256(*buf)
	var hexSum [64]byte
	hex.Encode(hexSum[:], sum[:])
	if !r.text || r.Hash != string(hexSum[:]) {
		return reasonHash
	}
	return ""
}
