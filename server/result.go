package server

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/jsonesc"
	"io"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/mark3labs/mcp-go/mcp"
)

// Bulk results: how a multi-megabyte text (an export) reaches stdout.
//
// mcp-go writes a tool's answer with json.Marshal of the whole JSON-RPC
// response, then fmt.Fprintf. CallToolResult is a json.Marshaler that builds
// a map and encodes the text once; encoding/json then validates and copies
// that output again with its scanner (compact, ~10 ns a byte), because every
// Marshaler's output is re-scanned; fmt copies it once more. For a 5 MB CSV
// that is ~100 ms of the front's CPU, more than the worker spends reading
// and rendering the rows.
//
// A content type whose MarshalJSON returns the text already encoded does not
// help: encoding/json re-scans a Marshaler's output at every level, so it
// would be scanned twice instead of once. So a bulk text is instead handed
// to mcp-go as a short, unguessable marker, and bulkWriter, which sits
// between mcp-go's stdio server and stdout, writes the text encoded once in
// the marker's place. The bytes on the wire are exactly those mcp-go would
// have written (TestBulkTextWireIsIdentical runs both through mcp-go's stdio
// server). Texts under bulkMin, and servers not reached through Serve (the
// in-process client of the call command), take mcp-go's own path.

// bulkMin is the text size from which a result is spliced in by bulkWriter.
const bulkMin = 64 << 10

// bulkExpiry drops spliced texts whose response mcp-go never wrote (a
// cancelled call), so they cannot pile up.
const bulkExpiry = 10 * time.Minute

// bulkWriter passes mcp-go's output through to w, writing each registered
// bulk text, JSON-encoded, in place of its marker. mcp-go writes each
// message as one Write of a whole line, under its own lock.
type bulkWriter struct {
	w      io.Writer
	prefix []byte // `"` + markerPrefix: where a marker starts in a line

	mu      sync.Mutex
	seq     uint64
	pending map[string]bulkText // marker -> text
}

type bulkText struct {
	encoded []byte // the JSON string, quotes included
	at      time.Time
}

// newBulkWriter wraps w with a marker prefix of its own, random per server.
func newBulkWriter(w io.Writer) *bulkWriter {
	var nonce [16]byte
	_, _ = rand.Read(nonce[:]) // never fails on supported platforms
	prefix := `"mcp-sqlite-memory/bulk/` + hex.EncodeToString(nonce[:]) + "/"
	return &bulkWriter{w: w, prefix: []byte(prefix), pending: map[string]bulkText{}}
}

// textResult is the tool result for text: mcp-go's own for small texts, a
// marker that b splices for bulk ones.
func (b *bulkWriter) textResult(text string) *mcp.CallToolResult {
	if b == nil || len(text) < bulkMin {
		return mcp.NewToolResultText(text)
	}
	encoded := appendJSONText(make([]byte, 0, len(text)+len(text)/8+16), text)
	now := time.Now()
	b.mu.Lock()
	for k, t := range b.pending {
		if now.Sub(t.at) > bulkExpiry {
			delete(b.pending, k)
		}
	}
	b.seq++
	marker := string(b.prefix[1:]) + strconv.FormatUint(b.seq, 10)
	b.pending[marker] = bulkText{encoded: encoded, at: now}
	b.mu.Unlock()
	return mcp.NewToolResultText(marker)
}

// Write writes p, splicing a bulk text in place of its quoted marker.
func (b *bulkWriter) Write(p []byte) (int, error) {
	b.mu.Lock()
	if len(b.pending) == 0 {
		b.mu.Unlock()
		return b.w.Write(p)
	}
	var text []byte
	i := bytes.Index(p, b.prefix)
	j := -1
	if i >= 0 {
		j = bytes.IndexByte(p[i+len(b.prefix):], '"')
	}
	if j >= 0 {
		j += i + len(b.prefix)
		marker := string(p[i+1 : j])
		if t, ok := b.pending[marker]; ok {
			text = t.encoded
			delete(b.pending, marker)
		}
	}
	b.mu.Unlock()
	if text == nil {
		return b.w.Write(p)
	}
	for _, part := range [][]byte{p[:i], text, p[j+1:]} {
		if _, err := b.w.Write(part); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// appendJSONText appends s as encoding/json encodes a string (HTML-safe,
// as json.Marshal does): '"', '\\' and control characters escaped (\b \f \n
// \r \t, else \u00xx), '<' '>' '&' as \u003c \u003e \u0026, U+2028 and
// U+2029 as \u2028 \u2029, each invalid UTF-8 byte as \ufffd, everything
// else as is. It skips eight plain ASCII bytes at a time.
func appendJSONText(dst []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	// Read only, as bytes, so that eight of them load as one word.
	b := unsafe.Slice(unsafe.StringData(s), len(s))
	dst = append(dst, '"')
	for len(b) > 0 {
		i := 0
		for i+8 <= len(b) && plainWord(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		for i < len(b) && jsonPlain[b[i]] {
			i++
		}
		dst = append(dst, b[:i]...)
		if i == len(b) {
			break
		}
		c := b[i]
		if c < utf8.RuneSelf {
			dst = jsonesc.AppendByte(dst, c)
			b = b[i+1:]
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			dst = append(dst, b[i:i+size]...)
		}
		b = b[i+size:]
	}
	return append(dst, '"')
}

// jsonPlain marks the ASCII bytes a JSON string holds as they are.
var jsonPlain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = true
	}
	for _, c := range `"\<>&` {
		t[c] = false
	}
	return t
}()

// plainWord reports whether the 8 bytes packed in x are all plain ASCII
// (jsonPlain), with the usual word-at-a-time tests: no byte >= 0x80 or
// < 0x20, none equal to '"', '\\', '<', '>' or '&'.
func plainWord(x uint64) bool {
	const ones = 0x0101010101010101
	q, bs := x^('"'*ones), x^('\\'*ones)
	lt, gt, amp := x^('<'*ones), x^('>'*ones), x^('&'*ones)
	hit := x | (x - 0x20*ones) | (q-ones)&^q | (bs-ones)&^bs | (lt-ones)&^lt | (gt-ones)&^gt | (amp-ones)&^amp
	return hit&(0x80*ones) == 0
}
