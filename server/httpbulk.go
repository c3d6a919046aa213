package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// The bulk-text fast path (result.go) over HTTP: mcp-go writes a tool's
// response with one Write, as JSON (json.Encoder) or as one SSE event, so
// the response writer of a POST finds the quoted placeholder in that
// Write and writes the already-encoded text in its place. The bytes are
// those mcp-go would have written with the text itself.

type httpBulkKey struct{}

// httpBulk is one POST's bulk text, if its handler made one.
type httpBulk struct {
	quoted []byte // the placeholder as JSON, quotes included

	mu      sync.Mutex
	text    string
	encoded []byte
	result  *mcp.CallToolResult
}

func newHTTPBulk() *httpBulk {
	var nonce [16]byte
	_, _ = rand.Read(nonce[:]) // never fails on supported platforms
	return &httpBulk{quoted: []byte(`"mcp-sqlite-memory/bulk/` + hex.EncodeToString(nonce[:]) + `"`)}
}

func httpBulkFrom(ctx context.Context) *httpBulk {
	b, _ := ctx.Value(httpBulkKey{}).(*httpBulk)
	return b
}

// BulkText returns the result mcp-go marshals, a placeholder in place of
// text; the response writer puts encoded there.
func (b *httpBulk) BulkText(text string, encoded []byte) *mcp.CallToolResult {
	res := mcp.NewToolResultText(string(b.quoted[1 : len(b.quoted)-1]))
	b.mu.Lock()
	b.text, b.encoded, b.result = text, encoded, res
	b.mu.Unlock()
	return res
}

// bulkWriter is a POST's response writer.
type bulkWriter struct {
	http.ResponseWriter
	b *httpBulk
}

func (w *bulkWriter) Write(p []byte) (int, error) {
	w.b.mu.Lock()
	encoded := w.b.encoded
	w.b.mu.Unlock()
	if encoded == nil {
		return w.ResponseWriter.Write(p)
	}
	i := bytes.LastIndex(p, w.b.quoted)
	if i < 0 {
		return w.ResponseWriter.Write(p)
	}
	w.b.mu.Lock()
	w.b.encoded = nil // one response per POST
	w.b.mu.Unlock()
	for _, part := range [][]byte{p[:i], encoded, p[i+len(w.b.quoted):]} {
		if _, err := w.ResponseWriter.Write(part); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Flush keeps SSE streaming through the wrapper (mcp-go streams only to
// a Flusher).
func (w *bulkWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *bulkWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// withBulk gives a POST its bulk text and writer.
func withBulk(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, *http.Request) {
	b := newHTTPBulk()
	return &bulkWriter{ResponseWriter: w, b: b}, r.WithContext(context.WithValue(r.Context(), httpBulkKey{}, b))
}
