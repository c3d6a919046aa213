package render

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// Kind is the storage class of a value, as SQLite reports it per cell.
type Kind uint8

// The storage classes. The zero Kind is Null, so a zero Value is NULL.
const (
	Null Kind = iota
	Integer
	Real
	Text
	Blob
)

// Value is one result cell. Only the field of its Kind is read; a blob
// carries its length only, since results never show its bytes.
type Value struct {
	Kind    Kind
	Int     int64
	Real    float64
	Text    string
	BlobLen int
}

// FormatReal returns f in the shortest form that reads back as the same
// float64 and always reads as REAL, exactly as the reference server (Python's
// repr) prints it: 2.0, 0.1, 100.0, 0.0001, 1e-05, 1e+16, 1.5e-07, -0.0.
// Fixed notation is used for decimal exponents -4..15, otherwise exponent
// notation with at least two exponent digits. Infinities are "Inf" and
// "-Inf", as the sqlite3 shell prints them; "NaN" cannot come from SQLite
// (it turns NaN into NULL) and is printed so only for completeness.
func FormatReal(f float64) string {
	var b [32]byte
	return string(AppendReal(b[:0], f))
}

// AppendReal appends FormatReal(f) to dst without allocating.
func AppendReal(dst []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(dst, "Inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-Inf"...)
	case f != f:
		return append(dst, "NaN"...)
	}
	// Shortest digits come from strconv in exponent form, [-]d[.ddd]e±dd;
	// the layout is then chosen by the exponent, like Python's repr.
	var scratch [32]byte
	e := strconv.AppendFloat(scratch[:0], f, 'e', -1, 64)
	k := len(e) - 1
	for e[k] != 'e' {
		k--
	}
	exp := 0
	for _, c := range e[k+2:] {
		exp = exp*10 + int(c-'0')
	}
	if e[k+1] == '-' {
		exp = -exp
	}
	if exp < -4 || exp >= 16 {
		return append(dst, e...)
	}
	m := e[:k]
	if m[0] == '-' {
		dst = append(dst, '-')
		m = m[1:]
	}
	var db [20]byte
	digits := append(db[:0], m[0])
	if len(m) > 2 {
		digits = append(digits, m[2:]...)
	}
	if exp < 0 {
		dst = append(dst, '0', '.')
		for i := -1; i > exp; i-- {
			dst = append(dst, '0')
		}
		return append(dst, digits...)
	}
	intLen := exp + 1
	if len(digits) <= intLen {
		dst = append(dst, digits...)
		for i := len(digits); i < intLen; i++ {
			dst = append(dst, '0')
		}
		return append(dst, '.', '0')
	}
	dst = append(dst, digits[:intLen]...)
	dst = append(dst, '.')
	return append(dst, digits[intLen:]...)
}

// CutCell applies the cell cap: a text longer than max characters (runes,
// not bytes; each invalid UTF-8 byte counts as one) becomes its first max
// characters followed by "...[+M chars]", M being the characters left out.
// It reports whether it cut. max <= 0 means no cap.
func CutCell(s string, max int) (string, bool) {
	i, extra := cutPoint(s, max)
	if extra == 0 {
		return s, false
	}
	return string(appendCutSuffix([]byte(s[:i]), extra)), true
}

// cutPoint returns the byte offset where s must be cut to keep max
// characters, and how many characters fall past it (0: no cut).
func cutPoint(s string, max int) (int, int) {
	// A string of at most max bytes has at most max runes: the common case
	// costs no decoding.
	if max <= 0 || len(s) <= max {
		return len(s), 0
	}
	n := 0
	for i := range s {
		if n == max {
			return i, utf8.RuneCountInString(s[i:])
		}
		n++
	}
	return len(s), 0
}

func appendCutSuffix(dst []byte, extra int) []byte {
	dst = append(dst, "...[+"...)
	dst = strconv.AppendInt(dst, int64(extra), 10)
	return append(dst, " chars]"...)
}

// appendBlob appends the placeholder that stands for a blob's bytes.
func appendBlob(dst []byte, n int) []byte {
	dst = append(dst, "<blob "...)
	dst = strconv.AppendInt(dst, int64(n), 10)
	return append(dst, " bytes>"...)
}
