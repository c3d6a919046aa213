package render

import (
	"math"
	"strconv"
)

// JSON renders a result in the shape of the read-only profile (SPEC 6):
//
//	{"columns":[...],"rows":[[...],...],"returnedRows":N,"limit":L,"offset":O,"hasMore":B}
//
// Integers are JSON integers, reals JSON numbers in FormatReal's form, text
// JSON strings, NULL null, blobs the string "<blob N bytes>". Infinities
// have no JSON number, so they are the strings "Inf" and "-Inf" (null would
// read as SQL NULL). Invalid UTF-8 in text becomes U+FFFD.
//
// The caps apply as in CSV, but the shape has no trailer to explain them: a
// text cell past MaxCellChars carries the "...[+M chars]" suffix, and when
// the byte cap stops the rows hasMore is true, so paging on with offset +
// returnedRows picks up exactly the rows left out.
type JSON struct {
	pager
}

// NewJSON starts a JSON result with its column names.
func NewJSON(caps Caps, columns []string) *JSON {
	w := &JSON{pager: newPager(caps)}
	b := append(w.buf, `{"columns":[`...)
	for i, c := range columns {
		if i > 0 {
			b = append(b, ',')
		}
		b, _ = appendJSONString(b, c, 0)
	}
	w.buf = append(b, `],"rows":[`...)
	return w
}

// Add renders one row; it returns false, and the caller stops reading, under
// the same rules as CSV.Add.
func (w *JSON) Add(row []Value) bool {
	if !w.begin() {
		return false
	}
	start, cut, max := len(w.buf), 0, w.caps.MaxCellChars
	b := w.buf
	if w.rows > 0 {
		b = append(b, ',')
	}
	b = append(b, '[')
	for i := range row {
		if i > 0 {
			b = append(b, ',')
		}
		v := &row[i]
		switch v.Kind {
		case Null:
			b = append(b, "null"...)
		case Integer:
			b = strconv.AppendInt(b, v.Int, 10)
		case Real:
			if math.IsInf(v.Real, 0) || v.Real != v.Real {
				b = append(AppendReal(append(b, '"'), v.Real), '"')
			} else {
				b = AppendReal(b, v.Real)
			}
		case Text:
			var c bool
			if b, c = appendJSONString(b, v.Text, max); c {
				cut++
			}
		case Blob:
			b = append(appendBlob(append(b, '"'), v.BlobLen), '"')
		}
	}
	w.buf = append(b, ']')
	return w.end(start, cut)
}

// Rows is the number of rows rendered so far.
func (w *JSON) Rows() int { return w.rows }

// CellsCut is the number of cells the cell cap shortened.
func (w *JSON) CellsCut() int { return w.cellsCut }

// Finish closes the document and returns it (no trailing newline); the
// writer is done. moreRows is as for CSV.Finish; hasMore is also true when
// the byte cap stopped the rows.
func (w *JSON) Finish(moreRows bool) []byte {
	b := append(w.buf, `],"returnedRows":`...)
	b = appendInt(b, w.rows)
	b = append(b, `,"limit":`...)
	b = appendInt(b, w.caps.Limit)
	b = append(b, `,"offset":`...)
	b = appendInt(b, w.caps.Offset)
	b = append(b, `,"hasMore":`...)
	b = strconv.AppendBool(b, moreRows || w.more || w.truncated)
	b = append(b, '}')
	w.buf, w.stopped = b, true
	return b
}

// appendJSONString appends s as a JSON string, cut to max characters when
// max > 0, and reports whether it cut. Only what JSON requires is escaped:
// quote, backslash and control characters; invalid UTF-8 becomes \ufffd.
func appendJSONString(dst []byte, s string, max int) ([]byte, bool) {
	i, extra := cutPoint(s, max)
	dst = appendJSONBody(append(dst, '"'), s[:i], ReplaceInvalid)
	if extra > 0 {
		dst = appendCutSuffix(dst, extra)
	}
	return append(dst, '"'), extra > 0
}
