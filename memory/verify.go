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
	"sync/atomic"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/render"
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
	b = render.AppendJSONString(b, v.HeadHash, render.EscapeAll)
	if !v.OK {
		b = append(b, `, "break_at_id": `...)
		b = strconv.AppendInt(b, v.BreakAtID, 10)
		b = append(b, `, "reason": `...)
		b = render.AppendJSONString(b, v.Reason, render.EscapeAll)
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
func (s *Store) Verify(ctx context.Context) (_ Verification, err error) {
	defer func() { err = markBusy(err) }()
	if err := ctx.Err(); err != nil {
		return Verification{}, fmt.Errorf("memory: verify: %w", err)
	}
	vc, err := s.takeVerifier()
	if err != nil {
		return Verification{}, fmt.Errorf("memory: verify: %w", err)
	}
	v, err := vc.run(ctx, s.path)
	s.returnVerifier(vc, err)
	if err != nil {
		return Verification{}, fmt.Errorf("memory: verify: %w", err)
	}
	return v, nil
}

// verifier is a read-only connection with the statements of a check, kept
// between calls (opening and preparing cost more than checking a short
// chain).
type verifier struct {
	conn    *rawsqlite.Conn
	rows    *rawsqlite.Stmt // every event in id order
	span    *rawsqlite.Stmt // the events with ids ?1 to ?2, in id order
	bounds  *rawsqlite.Stmt // the lowest and highest id
	count   *rawsqlite.Stmt
	batches []*chainBatch // reused by every check on this connection
	// other reads half of a long chain on a second connection, in the
	// same snapshot; opened when first needed.
	other atomic.Pointer[verifier]
}

// splitMin is the chain length from which two connections read it; a
// variable so that tests can split short chains.
var splitMin int64 = 20_000

func openVerifier(path string) (*verifier, error) {
	c, err := rawsqlite.Open(path, rawsqlite.ReadOnly)
	if err != nil {
		return nil, err
	}
	vc := &verifier{conn: c}
	const columns = `SELECT id, ts, session, kind, content, prev_hash, hash FROM memory_events`
	for _, p := range []struct {
		st  **rawsqlite.Stmt
		sql string
	}{
		{&vc.rows, columns + ` ORDER BY id`},
		{&vc.span, columns + ` WHERE id BETWEEN ?1 AND ?2 ORDER BY id`},
		// Two subqueries: each is answered from the ends of the table's
		// b-tree, where min(id), max(id) together would scan it.
		{&vc.bounds, `SELECT (SELECT min(id) FROM memory_events), (SELECT max(id) FROM memory_events)`},
		{&vc.count, `SELECT count(*) FROM memory_events`},
	} {
		if err == nil {
			*p.st, _, err = c.Prepare(p.sql)
		}
	}
	if err == nil {
		err = c.BusyTimeout(BusyTimeout)
	}
	if err != nil {
		vc.close()
		return nil, err
	}
	return vc, nil
}

func (vc *verifier) close() {
	if o := vc.other.Swap(nil); o != nil {
		o.close()
	}
	for _, st := range []*rawsqlite.Stmt{vc.rows, vc.span, vc.bounds, vc.count} {
		if st != nil {
			_ = st.Finalize()
		}
	}
	_ = vc.conn.Close()
}

// interrupt stops the statements running on vc's connections.
func (vc *verifier) interrupt() {
	vc.conn.Interrupt()
	if o := vc.other.Load(); o != nil {
		o.conn.Interrupt()
	}
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
func (vc *verifier) run(ctx context.Context, path string) (v Verification, err error) {
	stop := context.AfterFunc(ctx, vc.interrupt)
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
		err = errors.Join(err, vc.rows.Reset(), vc.span.Reset(), vc.bounds.Reset(), vc.count.Reset())
		if rerr := vc.conn.Exec("ROLLBACK"); err == nil {
			err = rerr
		}
	}()
	// The first read: it fixes the snapshot the whole check sees.
	if _, err := vc.bounds.Step(); err != nil {
		return v, err
	}
	first, last := vc.bounds.ColumnInt64(0), vc.bounds.ColumnInt64(1)
	if first == 1 && last >= splitMin && runtime.GOMAXPROCS(0) > 1 {
		if v, ok := vc.splitScan(path, last); ok || ctx.Err() != nil {
			return v, ctx.Err()
		}
		// Not intact (or no second reader): the sequential scan below
		// finds the first break exactly.
	}
	v, _, err = vc.scanChain(vc.rows, chainStart{prev: []byte(GenesisHash)})
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

// splitScan checks a chain whose ids run from 1 to last (the bounds of
// vc's snapshot) as two halves read at once, the upper one by a second
// connection that opens vc's snapshot. It reports ok only for an intact
// chain: ids 1 to last with no gap, each half's links and hashes right,
// and the upper half's first prev_hash the lower half's last hash. Anything
// else, an error included, is for the sequential scan to report.
func (vc *verifier) splitScan(path string, last int64) (Verification, bool) {
	other := vc.other.Load()
	if other == nil {
		var err error
		if other, err = openVerifier(path); err != nil {
			return Verification{}, false
		}
		vc.other.Store(other)
	}
	fail := func() (Verification, bool) {
		if o := vc.other.Swap(nil); o != nil {
			o.close() // it may be mid-transaction; the next check opens another
		}
		return Verification{}, false
	}
	snap, err := vc.conn.Snapshot()
	if err != nil {
		return Verification{}, false // not in WAL mode
	}
	defer snap.Free()
	if other.conn.Exec("BEGIN") != nil || other.conn.OpenSnapshot(snap) != nil {
		return fail()
	}
	mid := last / 2
	if vc.span.BindInt64(1, 1) != nil || vc.span.BindInt64(2, mid) != nil ||
		other.span.BindInt64(1, mid+1) != nil || other.span.BindInt64(2, last) != nil {
		return fail()
	}
	var high Verification
	var highPrev []byte
	var highErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		high, highPrev, highErr = other.scanChain(other.span, chainStart{row: mid})
	})
	low, _, lowErr := vc.scanChain(vc.span, chainStart{prev: []byte(GenesisHash)})
	wg.Wait()
	if highErr != nil || other.span.Reset() != nil || other.conn.Exec("ROLLBACK") != nil {
		return fail()
	}
	if lowErr != nil || !low.OK || low.Events != mid || !high.OK || high.Events != last || string(highPrev) != low.HeadHash {
		return Verification{}, false
	}
	return Verification{OK: true, Events: last, HeadID: last, HeadHash: high.HeadHash}, true
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
			c = AppendCanonicalBytes(append(c, ','), b.raw[from:end])
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

// chainStart is where a scan starts: the row number of its first row (whose
// id must be row+1) and the prev_hash that row must have (nil: whatever it
// has; scanChain returns it for the caller to check).
type chainStart struct {
	row  int64
	prev []byte
}

// scanChain steps rows (id, ts, session, kind, content, prev_hash, hash) in
// id order and stops at the first break. Rows before a break found by the
// reader (a gap, a broken link, a field that is not TEXT) are still hashed,
// and the earlier of the two breaks is the answer. It also returns the
// first row's prev_hash.
func (vc *verifier) scanChain(rows *rawsqlite.Stmt, start chainStart) (Verification, []byte, error) {
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

	v, row, firstPrev, err := readChain(rows, start, free, work, found)
	close(work)
	wg.Wait()
	if err != nil {
		return Verification{}, nil, err
	}
	if found.row >= 0 && (v.OK || found.row < row) {
		// Rows up to this one passed the reader's checks, so its id is
		// row+1 and the head before it is its prev_hash.
		return Verification{BreakAtID: found.row + 1, Reason: reasonHash, HeadID: found.row, HeadHash: found.prev}, firstPrev, nil
	}
	return v, firstPrev, nil
}

// readChain is scanChain's reading side: it checks ids, prev_hash links and
// that every field is TEXT, and copies the fields into batches. It returns
// the verification as far as the reader can tell, the row number where it
// stopped and the first row's prev_hash.
func readChain(rows *rawsqlite.Stmt, start chainStart, free <-chan *chainBatch, work chan<- *chainBatch, found *hashBreak) (Verification, int64, []byte, error) {
	v := Verification{OK: true, HeadID: start.row, HeadHash: string(start.prev)}
	prev := append(make([]byte, 0, hashLen), start.prev...)
	var firstPrev []byte
	b := <-free
	b.reset(start.row)
	var fields [6][]byte
	row := start.row
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
			return v, row, firstPrev, err
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
		if row == start.row {
			firstPrev = append([]byte(nil), prevHash...)
			if start.prev == nil {
				prev = append(prev[:0], prevHash...)
			}
		}
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
	return v, row, firstPrev, nil
}
