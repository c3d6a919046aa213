package portable

import (
	"bufio"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/memory"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/render"
)

// An export is untrusted input (SPEC 5.4): whoever hands a person a file
// to import or verify chooses every byte of it. Its lines are read with a
// bound, and each is parsed here, strictly, rather than by encoding/json,
// whose lenience a reader of the same file would not share: encoding/json
// matches keys without regard to case and takes the last of two equal
// keys ({"content":"benign","CONTENT":"evil"} reads as "evil", where jq
// and Python read "benign"), and it turns bytes that are not UTF-8, and
// \u escapes of lone surrogates, into U+FFFD. Here a key matches exactly,
// appears once, and text is UTF-8 or the line is refused.

// Bytes that are not UTF-8. Another program can store them in a text
// column (the sqlite3 CLI's CAST(x'ff' AS TEXT), a hook); the chain
// hashes the bytes as stored, so such a memory verifies. An export carries
// each such byte b as the JSON escape \udcXX (XX = b), the lone low
// surrogate U+DC80..U+DCFF that Python's "surrogateescape" error handler
// (PEP 383) decodes it to: Python's json.loads(line)[k].encode("utf-8",
// "surrogateescape") gives the stored bytes back, and so does this reader.
// The line stays UTF-8 (the escape is ASCII), the hash covers the stored
// bytes, and the form is canonical: an escape stands only for a byte that
// is not part of UTF-8 text where it stands (a reader that takes
// \udcc3\udca9 for "é" would give two files for one row), every other
// lone surrogate is refused as before. A reader that does not know the
// convention (jq, Go's encoding/json) reads U+FFFD, and the hash it
// computes does not check: it cannot be shown another text, only fail.

// appendExportBytes appends s as an export writes every string: the
// chain's canonical form (SPEC 5.1) where s is UTF-8, and each byte that
// is not part of UTF-8 text as \udcXX.
func appendExportBytes(dst, s []byte) []byte {
	if utf8.Valid(s) {
		return memory.AppendCanonicalBytes(dst, s)
	}
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == '"' || c == '\\' {
				dst = render.AppendJSONEscape(dst, c)
			} else {
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, '\\', 'u', 'd', 'c', lowerHex[c>>4], lowerHex[c&0xf])
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}

// appendExportString is appendExportBytes for a string.
func appendExportString(dst []byte, s string) []byte {
	if utf8.ValidString(s) {
		return render.AppendJSONString(dst, s, render.KeepBytes)
	}
	return appendExportBytes(dst, []byte(s))
}

const lowerHex = "0123456789abcdef"

// MaxLineBytes bounds one line of an export (docs/recall.md): the longest
// event an export holds is far shorter, and a reader that took any length
// could be made to hold an endless line in memory.
const MaxLineBytes = 16 << 20

// errLineTooLong: a line is longer than MaxLineBytes.
var errLineTooLong = fmt.Errorf("the line is longer than %d MiB, the bound of an export line; it was not read further", MaxLineBytes>>20)

// readLine reads the next line of br into buf (reused), without its "\n"
// or "\r\n", holding at most MaxLineBytes of it: a longer line is
// errLineTooLong, read no further. At the end of the input it returns
// io.EOF with the last line, if that had no "\n".
func readLine(br *bufio.Reader, buf []byte) ([]byte, error) {
	buf = buf[:0]
	for {
		chunk, err := br.ReadSlice('\n')
		if len(buf)+len(chunk) > MaxLineBytes+2 { // +2: the "\r\n" itself
			return nil, errLineTooLong
		}
		if need := len(buf) + len(chunk); need > cap(buf) {
			// Doubling, but never past the bound: a line at the bound
			// costs at most twice the bound in allocations.
			grown := make([]byte, len(buf), min(max(2*cap(buf), need), MaxLineBytes+2))
			copy(grown, buf)
			buf = grown
		}
		buf = append(buf, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if n := len(buf); n > 0 && buf[n-1] == '\n' {
			buf = buf[:n-1]
			if n > 1 && buf[n-2] == '\r' {
				buf = buf[:n-2]
			}
		}
		if len(buf) > MaxLineBytes {
			return nil, errLineTooLong
		}
		return buf, err
	}
}

// jsonValue is one value of an export line: a string or an integer.
type jsonValue struct {
	isNum bool
	str   string
	num   int64
}

// lineParser parses one line: a JSON object whose values are strings or
// integers, nothing else on the line but white space.
type lineParser struct {
	b   []byte
	pos int
}

// parseObject returns the line's keys (in order) and their values. A key
// that appears twice, text that is not UTF-8, and anything that is not
// JSON are errors.
func parseObject(b []byte) (keys []string, values map[string]jsonValue, err error) {
	if !utf8.Valid(b) {
		i := 0
		for i < len(b) {
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			i += size
		}
		return nil, nil, fmt.Errorf("byte %d is not UTF-8 text (0x%02x); an export is UTF-8", i+1, b[i])
	}
	p := &lineParser{b: b}
	p.space()
	if !p.eat('{') {
		return nil, nil, p.errorf("want a JSON object, one per line")
	}
	values = make(map[string]jsonValue)
	p.space()
	if p.eat('}') {
		return keys, values, p.end()
	}
	for {
		p.space()
		key, err := p.str()
		if err != nil {
			return nil, nil, err
		}
		if _, dup := values[key]; dup {
			return nil, nil, fmt.Errorf("key %q appears twice; each key appears once", key)
		}
		p.space()
		if !p.eat(':') {
			return nil, nil, p.errorf("want ':' after key %q", key)
		}
		p.space()
		var v jsonValue
		switch {
		case p.pos < len(p.b) && p.b[p.pos] == '"':
			v.str, err = p.str()
		case p.pos < len(p.b) && (p.b[p.pos] == '-' || p.b[p.pos] >= '0' && p.b[p.pos] <= '9'):
			v.isNum = true
			v.num, err = p.integer(key)
		default:
			err = p.errorf("the value of %q must be a string or an integer", key)
		}
		if err != nil {
			return nil, nil, err
		}
		keys = append(keys, key)
		values[key] = v
		p.space()
		if p.eat('}') {
			return keys, values, p.end()
		}
		if !p.eat(',') {
			return nil, nil, p.errorf("want ',' or '}'")
		}
	}
}

func (p *lineParser) errorf(format string, a ...any) error {
	return fmt.Errorf("at byte %d: %s", p.pos+1, fmt.Sprintf(format, a...))
}

func (p *lineParser) space() {
	for p.pos < len(p.b) {
		switch p.b[p.pos] {
		case ' ', '\t', '\r', '\n':
			p.pos++
		default:
			return
		}
	}
}

func (p *lineParser) eat(c byte) bool {
	if p.pos < len(p.b) && p.b[p.pos] == c {
		p.pos++
		return true
	}
	return false
}

func (p *lineParser) end() error {
	p.space()
	if p.pos != len(p.b) {
		return p.errorf("more than one JSON value on the line")
	}
	return nil
}

// integer reads a JSON number that is an integer and fits an int64.
func (p *lineParser) integer(key string) (int64, error) {
	start := p.pos
	p.eat('-')
	digits := p.pos
	for p.pos < len(p.b) && p.b[p.pos] >= '0' && p.b[p.pos] <= '9' {
		p.pos++
	}
	text := string(p.b[start:p.pos])
	switch {
	case p.pos == digits || (p.b[digits] == '0' && p.pos-digits > 1):
		return 0, p.errorf("%q is not a JSON number", text)
	case p.pos < len(p.b) && (p.b[p.pos] == '.' || p.b[p.pos] == 'e' || p.b[p.pos] == 'E'):
		return 0, p.errorf("the value of %q must be an integer", key)
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return 0, p.errorf("the value of %q, %s, is out of range", key, text)
	}
	return n, nil
}

// str reads a JSON string: every escape of JSON, \u escapes of surrogates
// only in pairs, no raw control character.
func (p *lineParser) str() (string, error) {
	if !p.eat('"') {
		return "", p.errorf("want a string")
	}
	start := p.pos
	// The common case: no escape, the bytes are the string.
	for p.pos < len(p.b) && p.b[p.pos] != '"' && p.b[p.pos] != '\\' && p.b[p.pos] >= 0x20 {
		p.pos++
	}
	if p.pos < len(p.b) && p.b[p.pos] == '"' {
		p.pos++
		return string(p.b[start : p.pos-1]), nil
	}
	out := append([]byte(nil), p.b[start:p.pos]...)
	// rawBytes are the offsets in out of the bytes \udcXX escapes gave.
	var rawBytes []int
	for {
		if p.pos >= len(p.b) {
			return "", p.errorf("unterminated string")
		}
		c := p.b[p.pos]
		switch {
		case c == '"':
			p.pos++
			if err := canonicalRawBytes(out, rawBytes); err != nil {
				return "", p.errorf("%v", err)
			}
			return string(out), nil
		case c < 0x20:
			return "", p.errorf("a control character (0x%02x) in a string must be escaped", c)
		case c != '\\':
			out = append(out, c)
			p.pos++
			continue
		}
		if p.pos+1 >= len(p.b) {
			return "", p.errorf("unterminated string")
		}
		e := p.b[p.pos+1]
		p.pos += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := p.hex4()
			if !ok {
				return "", p.errorf(`a \u escape needs four hex digits`)
			}
			if r >= 0xdc80 && r <= 0xdcff {
				// A byte that is not UTF-8 (appendExportBytes).
				rawBytes = append(rawBytes, len(out))
				out = append(out, byte(r))
				continue
			}
			if utf16.IsSurrogate(r) {
				lo := rune(-1)
				if p.pos+1 < len(p.b) && p.b[p.pos] == '\\' && p.b[p.pos+1] == 'u' {
					p.pos += 2
					lo, ok = p.hex4()
					if !ok {
						return "", p.errorf(`a \u escape needs four hex digits`)
					}
				}
				if r = utf16.DecodeRune(r, lo); r == utf8.RuneError {
					return "", p.errorf(`a \u escape is half of a surrogate pair, which is not UTF-8 text`)
				}
			}
			out = utf8.AppendRune(out, r)
		default:
			return "", p.errorf("unknown escape \\%c", e)
		}
	}
}

// canonicalRawBytes checks that the bytes \udcXX escapes gave (at the
// offsets raw, in order) are exactly the bytes of s that are not part of
// UTF-8 text: an escape never stands for text, and no stored byte is
// written two ways.
func canonicalRawBytes(s []byte, raw []int) error {
	if len(raw) == 0 {
		return nil
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRune(s[i:])
		escaped := len(raw) > 0 && raw[0] < i+size
		switch {
		case r == utf8.RuneError && size == 1 && escaped:
			raw = raw[1:]
		case escaped:
			return fmt.Errorf(`\udc%02x stands for a byte of the UTF-8 text %q; a \udcXX escape is only for a byte that is not UTF-8 text, and text is written as itself`, s[raw[0]], s[i:i+size])
		}
		i += size
	}
	return nil
}

func (p *lineParser) hex4() (rune, bool) {
	if p.pos+4 > len(p.b) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(p.b[p.pos:p.pos+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	p.pos += 4
	return rune(n), true
}
