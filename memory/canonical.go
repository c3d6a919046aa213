package memory

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/render"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// GenesisHash is the prev_hash of the first event: 64 '0' characters.
const GenesisHash = "0000000000000000000000000000000000000000000000000000000000000000"

const (
	// TimeLayout is the layout of every ts column: UTC, second precision.
	TimeLayout = "2006-01-02T15:04:05Z"
	// sessionLayout is the time part of a session id.
	sessionLayout = "20060102T150405Z"
)

// NewSession returns a session id "YYYYMMDDTHHMMSSZ-xxxx": the UTC start
// time and 4 random hex digits, one per server run.
func NewSession(now time.Time) string {
	var b [2]byte
	// crypto/rand.Read never fails on supported platforms (Go 1.24+).
	_, _ = rand.Read(b[:])
	return now.UTC().Format(sessionLayout) + "-" + hex.EncodeToString(b[:])
}

// Strip removes leading and trailing white space: exactly the characters
// Python's str.strip() removes, which is Unicode White_Space plus the
// separators U+001C..U+001F. Go's unicode.IsSpace covers White_Space.
func Strip(s string) string {
	return strings.TrimFunc(s, isPySpace)
}

func isPySpace(r rune) bool {
	return (r >= 0x1c && r <= 0x1f) || unicode.IsSpace(r)
}

// Canonical returns the bytes that are hashed for one event (SPEC 5.1): the
// compact JSON array [id, ts, session, kind, content, prev_hash] as Python's
// json.dumps(separators=(",", ":"), ensure_ascii=False) writes it.
//
// The arguments are hashed as given; callers strip kind and content first.
// Bytes that are not valid UTF-8 are copied through unchanged (Python cannot
// produce them; the hash then covers the bytes as stored).
func Canonical(id int64, ts, session, kind, content, prevHash string) []byte {
	n := 16 + len(ts) + len(session) + len(kind) + len(content) + len(prevHash) + 16
	return appendCanonical(make([]byte, 0, n), id, ts, session, kind, content, prevHash)
}

// appendCanonical is Canonical appending to dst.
func appendCanonical(dst []byte, id int64, ts, session, kind, content, prevHash string) []byte {
	dst = append(dst, '[')
	dst = strconv.AppendInt(dst, id, 10)
	for _, s := range [...]string{ts, session, kind, content, prevHash} {
		dst = append(dst, ',')
		dst = render.AppendJSONString(dst, s, render.KeepBytes)
	}
	return append(dst, ']')
}

// AppendCanonicalBytes appends s as a JSON string of the canonical form,
// the same bytes as render.AppendJSONString(dst, string(s), render.KeepBytes), for Verify
// and export (package portable), which read the fields as bytes. It skips eight bytes at a time while
// none of them needs an escape, since the texts of a chain are mostly
// plain.
func AppendCanonicalBytes(dst, s []byte) []byte {
	dst = append(dst, '"')
	for {
		i := 0
		for i+8 <= len(s) && !wordNeedsEscape(binary.LittleEndian.Uint64(s[i:])) {
			i += 8
		}
		for i < len(s) && !needsEscape[s[i]] {
			i++
		}
		dst = append(dst, s[:i]...)
		if i == len(s) {
			return append(dst, '"')
		}
		dst = render.AppendJSONEscape(dst, s[i])
		s = s[i+1:]
	}
}

// needsEscape marks the bytes the canonical form escapes: control
// characters, '"' and '\\'.
var needsEscape = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// wordNeedsEscape reports whether any of the 8 bytes packed in x needs an
// escape, with the usual SWAR tests: a byte below 0x20, or equal to '"' or
// '\\'. Bytes >= 0x80 never match.
func wordNeedsEscape(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	below := (x - 0x20*ones) &^ x
	q := x ^ ('"' * ones)
	quote := (q - ones) &^ q
	b := x ^ ('\\' * ones)
	backslash := (b - ones) &^ b
	return (below|quote|backslash)&highs != 0
}

// Hash returns the lowercase hex SHA-256 of Canonical(...).
func Hash(id int64, ts, session, kind, content, prevHash string) string {
	sum := sha256.Sum256(Canonical(id, ts, session, kind, content, prevHash))
	return hex.EncodeToString(sum[:])
}
