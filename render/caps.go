package render

import "strconv"

// Caps are the limits one result is rendered under. A field <= 0 means no
// such limit (exports raise the caps that way).
type Caps struct {
	// Limit is the page size: rows past it are not rendered, and offering
	// one (the caller fetches Limit+1) means more rows exist.
	Limit int
	// Offset is the number of rows this page skipped; the next page starts
	// at Offset + rows returned.
	Offset int
	// MaxRows is the highest limit an agent may ask for; the limit trailer
	// names it.
	MaxRows int
	// MaxBytes caps the rendered body: for CSV the UTF-8 bytes of the header
	// and rows, line ends included, trailer excluded; for JSON every byte of
	// the document before its closing totals. The first row is always kept.
	MaxBytes int
	// MaxCellChars caps text cells, counted in characters (runes).
	MaxCellChars int
}

// pager is the bookkeeping CSV and JSON share: one growing buffer, the row
// count, and why output stopped.
type pager struct {
	caps      Caps
	buf       []byte
	rows      int
	cellsCut  int
	truncated bool // the byte cap refused a row
	more      bool // a row past Limit was offered
	stopped   bool
}

func newPager(caps Caps) pager {
	// Start big enough for a typical capped result so it rarely regrows,
	// without reserving megabytes for an uncapped export up front.
	n := 4096
	if caps.MaxBytes > n {
		n = min(caps.MaxBytes+512, 1<<16)
	}
	return pager{caps: caps, buf: make([]byte, 0, n)}
}

// begin reports whether another row may be rendered, noting a row past the
// limit as proof that more rows exist.
func (p *pager) begin() bool {
	if p.stopped {
		return false
	}
	if p.caps.Limit > 0 && p.rows >= p.caps.Limit {
		p.more, p.stopped = true, true
		return false
	}
	if cap(p.buf)-len(p.buf) < rowRoom {
		p.grow()
	}
	return true
}

// rowRoom is the free space begin keeps ahead of a row.
const rowRoom = 4096

// maxReserve bounds how far ahead of the rows rendered so far grow reserves
// room on an estimate, so that a wrong guess costs at most that much
// address space (a worker's memory limit counts it).
const maxReserve = 16 << 20

// grow makes room for the rows to come: as much as the rows so far suggest
// the page will take (with a quarter to spare, at most maxReserve ahead)
// and at least double the buffer (a quarter more past 64 MiB, to spare
// memory), never far past the byte cap. append alone grows a large slice by
// a quarter at a time, which renders a multi-megabyte export into fresh
// memory about five times over, copying it as often; this does it about
// once.
func (p *pager) grow() {
	n := len(p.buf)
	if n > 64<<20 {
		n /= 4
	}
	if left := p.caps.Limit - p.rows; p.rows > 0 && left > 0 {
		perRow := len(p.buf)/p.rows + 1
		est := maxReserve
		if left < maxReserve/perRow {
			est = min(perRow*left+perRow*left/4, maxReserve)
		}
		n = max(n, est)
	}
	size := len(p.buf) + n
	if p.caps.MaxBytes > 0 {
		size = min(size, p.caps.MaxBytes+rowRoom)
	}
	if size <= cap(p.buf)+rowRoom {
		return // not worth a copy; append grows the buffer if a row needs it
	}
	// Not slices.Grow: it zeroes the new space, a pass over memory that
	// make skips when the runtime hands out fresh pages.
	buf := make([]byte, len(p.buf), size)
	copy(buf, p.buf)
	p.buf = buf
}

// end keeps the row rendered since start unless it broke the byte cap, which
// never drops the first row.
func (p *pager) end(start, cut int) bool {
	if p.caps.MaxBytes > 0 && p.rows > 0 && len(p.buf) > p.caps.MaxBytes {
		p.buf = p.buf[:start]
		p.truncated, p.stopped = true, true
		return false
	}
	p.rows++
	p.cellsCut += cut
	return true
}

func appendInt(dst []byte, n int) []byte {
	return strconv.AppendInt(dst, int64(n), 10)
}
