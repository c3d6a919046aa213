package snapshot

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Printable is s made safe to print on a terminal or in a log line: C0
// and C1 control characters (ESC, CR, LF and tab included), DEL, the
// bidirectional controls, zero-width characters, line and paragraph
// separators and bytes that are not UTF-8 are written as \xNN or \u{NNNN}
// escapes, and a backslash as \\, so that a text from a record or snapshot
// can neither fake lines of output nor reorder what a person reads.
func Printable(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || r == '\\' || hidden(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case r < 0x80 && hidden(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case hidden(r):
			fmt.Fprintf(&b, `\u{%04x}`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// hidden reports characters that control a terminal or the order and
// visibility of text rather than show a glyph.
func hidden(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
		return true
	case r == 0x061c, r == 0x180e, r == 0xad: // Arabic letter mark, Mongolian vowel separator, soft hyphen
		return true
	case r >= 0x200b && r <= 0x200f, r >= 0x2028 && r <= 0x202e, r >= 0x2060 && r <= 0x206f:
		return true // zero-width, LRM/RLM, separators, embeddings and overrides, isolates
	case r == 0xfeff, r >= 0xfff9 && r <= 0xfffb:
		return true
	}
	return false
}
