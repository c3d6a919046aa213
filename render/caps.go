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
	return true
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
