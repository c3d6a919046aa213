package server

import (
	"context"
	"encoding/binary"
	"unicode/utf8"
	"unsafe"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/render"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server/mcpstdio"
)

// Bulk results: how a multi-megabyte text (an export) reaches stdout.
//
// mcp-go marshals a tool's answer with json.Marshal of the whole JSON-RPC
// response. CallToolResult is a json.Marshaler that builds a map and
// encodes the text once; encoding/json then validates and copies that
// output again with its scanner (compact, ~10 ns a byte), because every
// Marshaler's output is re-scanned. For a 5 MB CSV that is ~100 ms of the
// front's CPU, more than the worker spends reading and rendering the rows.
//
// A content type whose MarshalJSON returns the text already encoded does not
// help: encoding/json re-scans a Marshaler's output at every level, so it
// would be scanned twice instead of once. So a bulk text is encoded once
// here (appendJSONText) and handed to the stdio loop's writer, which writes
// it in the response that mcp-go marshals around a placeholder
// (mcpstdio.Call.BulkText). The bytes on the wire are exactly those mcp-go
// would have written (TestBulkTextWireIsIdentical runs both). Texts under
// bulkMin, and calls not served by the stdio loop (the in-process client
// of the call command), take mcp-go's own path.

// bulkMin is the text size from which a result is encoded here.
const bulkMin = 64 << 10

// bulker writes an already-encoded text in place of the result mcp-go
// marshals: the stdio loop's call (mcpstdio.Call), or an HTTP response
// (httpBulk).
type bulker interface {
	BulkText(text string, encoded []byte) *mcp.CallToolResult
}

// bulkerOf is the call's bulker, nil for in-process calls.
func bulkerOf(ctx context.Context, stdio *mcpstdio.Call) bulker {
	if stdio != nil {
		return stdio
	}
	if b := httpBulkFrom(ctx); b != nil {
		return b
	}
	return nil
}

// textResult is the tool result for text: mcp-go's own for small texts and
// in-process calls, an already-encoded bulk text for large ones.
func textResult(bulk bulker, text string) *mcp.CallToolResult {
	if bulk == nil || len(text) < bulkMin {
		return mcp.NewToolResultText(text)
	}
	return bulk.BulkText(text, appendJSONText(make([]byte, 0, len(text)+len(text)/8+16), text))
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
			dst = render.AppendJSONEscape(dst, c)
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
