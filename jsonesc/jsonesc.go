// Package jsonesc escapes the bytes every JSON string escapes the same way.
//
// The project writes JSON strings by hand in several dialects: the memory
// chain's canonical form, Python-compatible audit details, encoding/json's
// HTML-safe form for bulk results, and the JSON results of read tools. They
// differ in what else they escape (HTML characters, U+2028/9, non-ASCII),
// never in how a quote, a backslash or a control character is written.
package jsonesc

const hexDigits = "0123456789abcdef"

// AppendByte appends the escape of c, which must be '"', '\\' or a control
// character (below 0x20): a backslash before the quote or backslash, the
// short forms \b \f \n \r \t, else \u00xx with lowercase hex digits.
func AppendByte(dst []byte, c byte) []byte {
	switch c {
	case '"', '\\':
		return append(dst, '\\', c)
	case '\b':
		return append(dst, '\\', 'b')
	case '\f':
		return append(dst, '\\', 'f')
	case '\n':
		return append(dst, '\\', 'n')
	case '\r':
		return append(dst, '\\', 'r')
	case '\t':
		return append(dst, '\\', 't')
	}
	return append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
}
