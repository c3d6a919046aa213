package render

import "strconv"

// CSV renders a result as CSV with the "# N rows" trailer (SPEC 3): header
// row first, NULL as an empty field, the empty string as "", blobs as
// <blob N bytes>, integers as integers, reals by FormatReal, text as is.
//
// A result without columns (a statement that returns none) has no header
// line: its text is the trailer alone, "# 0 rows". A one-column row holding
// NULL is an empty line, as the rules say; note that readers which skip
// blank lines (encoding/csv does) lose it.
type CSV struct {
	pager
}

// NewCSV starts a CSV result with its header row.
func NewCSV(caps Caps, columns []string) *CSV {
	w := &CSV{pager: newPager(caps)}
	if len(columns) > 0 {
		// An empty column name is quoted so the header keeps its width.
		w.buf = AppendRecord(w.buf, columns, true)
	}
	return w
}

// Add renders one row. It returns false when the row was not added: it is
// past the limit (so more rows exist) or would break the byte cap (unless it
// is the first row, which is always kept). After false the caller stops
// reading; later calls return false too.
func (w *CSV) Add(row []Value) bool {
	if !w.begin() {
		return false
	}
	start, cut, max := len(w.buf), 0, w.caps.MaxCellChars
	b := w.buf
	for i := range row {
		if i > 0 {
			b = append(b, ',')
		}
		v := &row[i]
		switch v.Kind {
		case Integer:
			b = strconv.AppendInt(b, v.Int, 10)
		case Real:
			b = AppendReal(b, v.Real)
		case Text:
			var c bool
			if b, c = appendFieldCut(b, v.Text, max); c {
				cut++
			}
		case Blob:
			b = appendBlob(b, v.BlobLen)
		}
	}
	w.buf = append(b, '\n')
	return w.end(start, cut)
}

// AddStrings renders a row of text cells, for callers that format their own
// cells (search_text snippets). Cell cap and byte cap apply as in Add.
func (w *CSV) AddStrings(row []string) bool {
	if !w.begin() {
		return false
	}
	start, cut := len(w.buf), 0
	b := w.buf
	for i, s := range row {
		if i > 0 {
			b = append(b, ',')
		}
		var c bool
		if b, c = appendFieldCut(b, s, w.caps.MaxCellChars); c {
			cut++
		}
	}
	w.buf = append(b, '\n')
	return w.end(start, cut)
}

// Rows is the number of rows rendered so far.
func (w *CSV) Rows() int { return w.rows }

// Truncated reports whether the byte cap refused a row.
func (w *CSV) Truncated() bool { return w.truncated }

// CellsCut is the number of cells the cell cap shortened.
func (w *CSV) CellsCut() int { return w.cellsCut }

// Body returns the header and rows without a trailer, for callers that write
// their own (search_text), in place of Finish. It aliases the internal
// buffer.
func (w *CSV) Body() []byte { return w.buf }

// Finish appends the trailer and returns the whole text; the writer is done.
// moreRows says the caller found a row past the limit without offering it
// to Add; a row refused by Add for the limit counts the same.
//
// The trailer is one line with no newline after it:
//
//	# N rows
//	# N rows, truncated at B bytes (select fewer columns or narrow the query)
//	# N rows, truncated by limit=L (more rows exist; raise limit up to MAX, use offset=K, or narrow the query)
//
// each followed by "; C cells cut to X chars" when cells were cut. The byte
// cap wins when both apply. "rows" is kept for N = 1, as the reference
// server writes it.
func (w *CSV) Finish(moreRows bool) []byte {
	b := append(w.buf, "# "...)
	b = appendInt(b, w.rows)
	b = append(b, " rows"...)
	switch {
	case w.truncated:
		b = append(b, ", truncated at "...)
		b = appendInt(b, w.caps.MaxBytes)
		b = append(b, " bytes (select fewer columns or narrow the query)"...)
	case moreRows || w.more:
		b = append(b, ", truncated by limit="...)
		b = appendInt(b, w.caps.Limit)
		b = append(b, " (more rows exist; raise limit up to "...)
		b = appendInt(b, w.caps.MaxRows)
		b = append(b, ", use offset="...)
		b = appendInt(b, w.caps.Offset+w.rows)
		b = append(b, ", or narrow the query)"...)
	}
	if w.cellsCut > 0 {
		b = append(b, "; "...)
		b = appendInt(b, w.cellsCut)
		b = append(b, " cells cut to "...)
		b = appendInt(b, w.caps.MaxCellChars)
		b = append(b, " chars"...)
	}
	w.buf, w.stopped = b, true
	return b
}
