package memory

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
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
// This is the hot path of verify_chain and of every get_resume_context, so
// it reads rows through rawsqlite (no database/sql, no string per cell):
// one goroutine steps the rows, checks ids and prev_hash links and writes
// each event's canonical form into a reused batch buffer straight from
// SQLite's row memory; the other cores hash the batches. Whether event i's
// stored hash is right depends on row i alone, so hashing in parallel
// reports the same first break as a sequential check.
func (s *Store) Verify(ctx context.Context) (Verification, error) {
	if err := ctx.Err(); err != nil {
		return Verification{}, fmt.Errorf("memory: verify: %w", err)
	}
	vc, err := s.takeVerifier()
	if err != nil {
		return Verification{}, fmt.Errorf("memory: verify: %w", err)
	}
	v, err := vc.run(ctx)
	s.returnVerifier(vc, err)
	if err != nil {
		return Verification{}, fmt.Errorf("memory: verify: %w", err)
	}
	return v, nil
}

// verifier is a read-only connection with the two statements of a check,
// kept between calls (opening and preparing cost more than checking a
// short chain).
type verifier struct {
	conn    *rawsqlite.Conn
	rows    *rawsqlite.Stmt
	count   *rawsqlite.Stmt
	batches []*chainBatch // reused by every check on this connection
}

func openVerifier(path string) (*verifier, error) {
	c, err := rawsqlite.Open(path, rawsqlite.ReadOnly)
	if err != nil {
		return nil, err
	}
	vc := &verifier{conn: c}
	if err = c.BusyTimeout(BusyTimeout); err == nil {
		vc.rows, _, err = c.Prepare(`SELECT id, ts, session, kind, content, prev_hash, hash FROM memory_events ORDER BY id`)
	}
	if err == nil {
		vc.count, _, err = c.Prepare(`SELECT count(*) FROM memory_events`)
	}
	if err != nil {
		vc.close()
		return nil, err
	}
	return vc, nil
}

func (vc *verifier) close() {
	for _, st := range []*rawsqlite.Stmt{vc.rows, vc.count} {
		if st != nil {
			_ = st.Finalize()
		}
	}
	_ = vc.conn.Close()
}

// takeVerifier returns the idle verifier, or a new one when it is in use.
func (s *Store) takeVerifier() (*verifier, error) {
	s.verifiers.Lock()
	vc, closed := s.verifiers.idle, s.verifiers.closed
	s.verifiers.idle = nil
	s.verifiers.Unlock()
	if closed {
		return nil, errors.New("store is closed")
	}
	if vc != nil {
		return vc, nil
	}
	return openVerifier(s.path)
}

// returnVerifier keeps vc for the next call unless it failed (it may be
// left in a transaction or interrupted), the store is closed, or another
// one is already kept.
func (s *Store) returnVerifier(vc *verifier, err error) {
	if err == nil {
		s.verifiers.Lock()
		keep := s.verifiers.idle == nil && !s.verifiers.closed
		if keep {
			s.verifiers.idle = vc
		}
		s.verifiers.Unlock()
		if keep {
			return
		}
	}
	vc.close()
}

// run checks the chain in one read transaction; cancelling ctx interrupts
// the scan.
func (vc *verifier) run(ctx context.Context) (v Verification, err error) {
	stop := context.AfterFunc(ctx, vc.conn.Interrupt)
	defer func() {
		stop()
		if ctx.Err() != nil && err != nil {
			err = ctx.Err()
		}
	}()
	if err := vc.conn.Exec("BEGIN"); err != nil {
		return v, err
	}
	defer func() {
		err = errors.Join(err, vc.rows.Reset(), vc.count.Reset())
		if rerr := vc.conn.Exec("ROLLBACK"); err == nil {
			err = rerr
		}
	}()
	v, err = vc.scanChain()
	if err != nil || v.OK {
		return v, err
	}
	// Broken: the scan stopped early; count every row as the reference does.
	if _, err := vc.count.Step(); err != nil {
		return v, err
	}
	v.Events = vc.count.ColumnInt64(0)
	return v, nil
}

// Batches carry events from the reading goroutine to the hashing ones.
const (
	batchEvents = 1024
	batchBytes  = 192 << 10
	hashLen     = 64 // a lowercase hex SHA-256
)

// chainBatch holds consecutive events that passed the reader's checks:
// their six text fields back to back in raw, and where each ends.
type chainBatch struct {
	first  int64 // row number (0-based) of the first event
	raw    []byte
	events []batchEvent
}

// batchEvent is one event of a batch: its id and the end offsets in raw of
// ts, session, kind, content, prev_hash and hash (each field starts where
// the one before it ends; ts where the previous event's hash ends).
type batchEvent struct {
	id   int64
	ends [6]int
}

func (b *chainBatch) reset(first int64) {
	b.first, b.raw, b.events = first, b.raw[:0], b.events[:0]
}

func (b *chainBatch) full() bool {
	return len(b.events) == batchEvents || len(b.raw) >= batchBytes
}

// hashBreak is the first event, by row number, whose stored hash differs
// from the recomputed one, with its prev_hash (the head before it).
type hashBreak struct {
	mu   sync.Mutex
	row  int64 // -1: none found
	prev string
}

func (h *hashBreak) before(row int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.row >= 0 && h.row < row
}

func (h *hashBreak) note(row int64, prev []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.row < 0 || row < h.row {
		h.row, h.prev = row, string(prev)
	}
}

// check recomputes the hash of every event of b, building each canonical
// form in *canon, and notes the first mismatch.
func (b *chainBatch) check(found *hashBreak, canon *[]byte) {
	var hexSum [hashLen]byte
	start := 0
	for i := range b.events {
		e := &b.events[i]
		c := append((*canon)[:0], '[')
		c = strconv.AppendInt(c, e.id, 10)
		from := start
		for _, end := range e.ends[:5] {
			c = appendCanonicalBytes(append(c, ','), b.raw[from:end])
			from = end
		}
		c = append(c, ']')
		*canon = c
		sum := sha256.Sum256(c)
		hex.Encode(hexSum[:], sum[:])
		if !bytes.Equal(hexSum[:], b.raw[e.ends[4]:e.ends[5]]) {
			found.note(b.first+int64(i), b.raw[e.ends[3]:e.ends[4]])
			return
		}
		start = e.ends[5]
	}
}

// scanChain steps rows (id, ts, session, kind, content, prev_hash, hash) in
// id order and stops at the first break. Rows before a break found by the
// reader (a gap, a broken link, a field that is not TEXT) are still hashed,
// and the earlier of the two breaks is the answer.
func (vc *verifier) scanChain() (Verification, error) {
	hashers := max(1, runtime.GOMAXPROCS(0)-1)
	for len(vc.batches) < hashers+2 {
		// Batches start small and grow to batchBytes only for long chains.
		vc.batches = append(vc.batches, &chainBatch{})
	}
	free := make(chan *chainBatch, len(vc.batches))
	for _, b := range vc.batches {
		free <- b
	}
	work := make(chan *chainBatch, len(vc.batches))
	found := &hashBreak{row: -1}
	var wg sync.WaitGroup
	for range hashers {
		wg.Go(func() {
			var canon []byte
			for b := range work {
				b.check(found, &canon)
				free <- b
			}
		})
	}

	v, row, err := readChain(vc.rows, free, work, found)
	close(work)
	wg.Wait()
	if err != nil {
		return Verification{}, err
	}
	if found.row >= 0 && (v.OK || found.row < row) {
		// Rows up to this one passed the reader's checks, so its id is
		// row+1 and the head before it is its prev_hash.
		return Verification{BreakAtID: found.row + 1, Reason: reasonHash, HeadID: found.row, HeadHash: found.prev}, nil
	}
	return v, nil
}

// readChain is scanChain's reading side: it checks ids, prev_hash links and
// that every field is TEXT, and copies the fields into batches. It returns
// the verification as far as the reader can tell and the row number where
// it stopped.
func readChain(rows *rawsqlite.Stmt, free <-chan *chainBatch, work chan<- *chainBatch, found *hashBreak) (Verification, int64, error) {
	v := Verification{OK: true, HeadHash: GenesisHash}
	prev := append(make([]byte, 0, hashLen), GenesisHash...)
	b := <-free
	b.reset(0)
	var fields [6][]byte
	row := int64(0)
	for ; ; row++ {
		if b.full() {
			work <- b
			b = <-free
			b.reset(row)
			if found.before(row) {
				break // a hash already broke earlier; nothing past it matters
			}
		}
		ok, err := rows.Step()
		if err != nil {
			work <- b
			return v, row, err
		}
		if !ok {
			break
		}
		id := rows.ColumnInt64(0)
		text := true
		for i := range fields {
			// The type first: reading a value as text may convert it.
			if rows.ColumnType(i+1) != rawsqlite.TypeText {
				text = false
			}
			fields[i] = rows.ColumnTextView(i + 1)
		}
		prevHash, hash := fields[4], fields[5]
		reason := ""
		switch {
		case id != row+1:
			reason = fmt.Sprintf(reasonGapFmt, row+1, id)
		case !bytes.Equal(prevHash, prev):
			reason = fmt.Sprintf(reasonPrevFmt, id-1)
		case !text || len(hash) != hashLen:
			reason = reasonHash
		}
		if reason != "" {
			v = Verification{BreakAtID: id, Reason: reason, HeadID: row, HeadHash: string(prev)}
			break
		}
		e := batchEvent{id: id}
		for i, f := range fields {
			b.raw = append(b.raw, f...)
			e.ends[i] = len(b.raw)
		}
		b.events = append(b.events, e)
		prev = append(prev[:0], hash...)
	}
	work <- b
	if v.OK {
		v.Events, v.HeadID, v.HeadHash = row, row, string(prev)
	}
	return v, row, nil
}
