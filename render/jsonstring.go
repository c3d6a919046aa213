package render

import "unicode/utf8"

// The project writes JSON strings by hand in several dialects: the memory
// chain's canonical form, Python-compatible audit details, encoding/json's
// HTML-safe form for bulk results, and the JSON results of read tools. They
// differ in what they do with non-ASCII text (and the bulk form in HTML
// characters and U+2028/9), never in how a quote, a backslash or a control
// character is written: that is [AppendJSONEscape], and [AppendJSONString]
// is the one escape loop of the first three.

const hexDigits = "0123456789abcdef"

// AppendJSONEscape appends the escape of c, which must be '"', '\\' or a
// control character (below 0x20): a backslash before the quote or
// backslash, the short forms \b \f \n \r \t, else \u00xx with lowercase hex
// digits.
func AppendJSONEscape(dst []byte, c byte) []byte {
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

// NonASCII says what [AppendJSONString] writes for the bytes of 0x80 and
// above.
type NonASCII int

const (
	// KeepBytes copies them as they are, valid UTF-8 or not: Python's
	// json.dumps(ensure_ascii=False), as the memory chain's canonical form
	// writes it (its hash covers the bytes as stored).
	KeepBytes NonASCII = iota
	// ReplaceInvalid copies valid UTF-8 and writes each byte that is not
	// as \ufffd: the JSON results of read tools.
	ReplaceInvalid
	// EscapeAll writes every non-ASCII character as \uXXXX (a surrogate
	// pair above the BMP; an invalid byte as \ufffd): Python's default
	// ensure_ascii=True.
	EscapeAll
)

// AppendJSONString appends s as a JSON string: '"' and '\\' escaped, \b \f
// \n \r \t short forms, other control characters as lowercase \u00xx,
// non-ASCII as na says, and nothing else escaped (no HTML escaping; U+2028,
// U+2029 and DEL stay raw).
func AppendJSONString(dst []byte, s string, na NonASCII) []byte {
	dst = append(dst, '"')
	return append(appendJSONBody(dst, s, na), '"')
}

// appendJSONBody is AppendJSONString without the quotes around it.
func appendJSONBody(dst []byte, s string, na NonASCII) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = AppendJSONEscape(append(dst, s[start:i]...), c)
			i++
			start = i
			continue
		}
		if na == KeepBytes {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case na == EscapeAll:
			dst = appendUEscape(append(dst, s[start:i]...), r)
		case r == utf8.RuneError && size == 1:
			dst = append(append(dst, s[start:i]...), `\ufffd`...)
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(dst, s[start:]...)
}

// appendUEscape writes r as \uXXXX, or a surrogate pair above the BMP.
func appendUEscape(dst []byte, r rune) []byte {
	if r > 0xffff {
		r -= 0x10000
		dst = appendU4(dst, 0xd800+(r>>10))
		return appendU4(dst, 0xdc00+(r&0x3ff))
	}
	return appendU4(dst, r)
}

func appendU4(dst []byte, r rune) []byte {
	return append(dst, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
}
