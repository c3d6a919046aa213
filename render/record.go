package render

import "strings"

// AppendRecord appends one CSV record (RFC 4180, minimal quoting, "\n" line
// end) to dst. A field is quoted only when it contains a comma, a quote, a
// CR or LF, or when it is empty and quoteEmpty is set: that is how an empty
// string is told apart from NULL, which is written as an empty field.
func AppendRecord(dst []byte, fields []string, quoteEmpty bool) []byte {
	for i, f := range fields {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendField(dst, f, quoteEmpty)
	}
	return append(dst, '\n')
}

// AppendField appends one CSV field, quoted when needed.
func AppendField(dst []byte, f string, quoteEmpty bool) []byte {
	if !needsQuotes(f) && !(quoteEmpty && f == "") {
		return append(dst, f...)
	}
	return append(appendQuotedBody(append(dst, '"'), f), '"')
}

// appendFieldCut appends text cell s cut to max characters (see CutCell),
// quoting and escaping in the same pass so a cut costs no allocation. It
// reports whether it cut. The suffix holds no character that needs quoting.
func appendFieldCut(dst []byte, s string, max int) ([]byte, bool) {
	i, extra := cutPoint(s, max)
	if extra == 0 {
		return AppendField(dst, s, true), false
	}
	p := s[:i]
	if !needsQuotes(p) {
		return appendCutSuffix(append(dst, p...), extra), true
	}
	dst = appendQuotedBody(append(dst, '"'), p)
	return append(appendCutSuffix(dst, extra), '"'), true
}

// appendQuotedBody appends f with each quote doubled, copying the runs
// between quotes whole.
func appendQuotedBody(dst []byte, f string) []byte {
	for {
		i := strings.IndexByte(f, '"')
		if i < 0 {
			return append(dst, f...)
		}
		dst = append(dst, f[:i+1]...)
		dst = append(dst, '"')
		f = f[i+1:]
	}
}

// special marks the bytes that force a field into quotes.
var special = [256]bool{',': true, '"': true, '\n': true, '\r': true}

func needsQuotes(f string) bool {
	for i := 0; i < len(f); i++ {
		if special[f[i]] {
			return true
		}
	}
	return false
}
