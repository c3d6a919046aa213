package mcpstdio

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/mark3labs/mcp-go/mcp"
)

// Call is one request being served: what its handler decides about the
// response (none, or a bulk text) and the notifications it sends before
// the response. A handler finds it with CallFrom. A nil *Call (a request
// that did not come through Serve, such as one from mcp-go's in-process
// client) answers the normal way: its methods do what mcp-go alone does.
type Call struct {
	out *writer
	// received is when the request's line was read, dispatched when the
	// read loop took it, running when its goroutine started.
	received, dispatched, running time.Time

	mu       sync.Mutex
	finished bool // the response was written or dropped
	drop     bool
	bulk     *bulkText
	// written, if set, is called once the response is written.
	written func(at time.Time)
}

// bulkText is a result text already encoded as a JSON string, to be
// written in place of the placeholder that mcp-go marshals.
type bulkText struct {
	result  *mcp.CallToolResult
	text    string
	encoded []byte
}

type callKey struct{}

func withCall(ctx context.Context, c *Call) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

// CallFrom returns the call a handler's context belongs to, or nil when
// the request did not come through Serve.
func CallFrom(ctx context.Context) *Call {
	c, _ := ctx.Value(callKey{}).(*Call)
	return c
}

// Received returns when the request's line was read, when the read loop
// dispatched it, and when its goroutine started running (zero times for a
// nil Call).
func (c *Call) Received() (read, dispatched, running time.Time) {
	if c == nil {
		return
	}
	return c.received, c.dispatched, c.running
}

// OnWritten makes fn be called once the call's response is written (not
// when it is dropped), with the time its write began. It is for measuring
// a call.
func (c *Call) OnWritten(fn func(at time.Time)) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.written = fn
	c.mu.Unlock()
}

// DropResponse makes the call end without a response: MCP sends none to
// a request the client cancelled or that shutdown stopped.
func (c *Call) DropResponse() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.drop = true
	c.mu.Unlock()
}

// BulkText returns a text result whose text is written as encoded, which
// must be exactly encoding/json's encoding of text (quotes included): the
// response is marshalled by mcp-go around a short placeholder and encoded
// is written in its place, so a large text is encoded once, not re-scanned
// and copied by encoding/json. A nil Call returns mcp-go's own result.
func (c *Call) BulkText(text string, encoded []byte) *mcp.CallToolResult {
	if c == nil {
		return mcp.NewToolResultText(text)
	}
	res := mcp.NewToolResultText(c.out.placeholder)
	c.mu.Lock()
	c.bulk = &bulkText{result: res, text: text, encoded: encoded}
	c.mu.Unlock()
	return res
}

// Notify sends a notification (such as notifications/progress) that
// belongs to the call. Once the call's response is written or dropped it
// sends nothing: no notification of a call may follow its response.
func (c *Call) Notify(method string, params map[string]any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.finished {
		return nil
	}
	return c.out.write(nil, map[string]any{"jsonrpc": mcp.JSONRPC_VERSION, "method": method, "params": params})
}

// writer writes every outgoing message, one line each, whole: responses,
// notifications and the session's requests to the client.
type writer struct {
	log hclog.Logger
	// placeholder is the text a bulk result carries until it is written:
	// random per writer, so that no other text can be taken for it.
	placeholder string

	mu sync.Mutex
	w  io.Writer
}

func newWriter(w io.Writer, log hclog.Logger) *writer {
	var nonce [16]byte
	_, _ = rand.Read(nonce[:]) // never fails on supported platforms
	return &writer{w: w, log: log, placeholder: "mcp-sqlite-memory/bulk/" + hex.EncodeToString(nonce[:])}
}

// write marshals msg, the response of c (nil for a message of no call),
// and writes it as mcp-go's StdioServer does: the JSON and a newline. A
// dropped call, or one that has no response (msg nil), writes nothing; a bulk one writes its encoded text in the
// placeholder's place.
func (w *writer) write(c *Call, msg any) error {
	var bulk *bulkText
	if c != nil {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.finished = true
		if c.drop || msg == nil {
			return nil
		}
		bulk = c.bulk
	}
	line, err := json.Marshal(msg)
	if err != nil {
		w.log.Error("cannot encode a message", "error", err)
		return err
	}
	parts := [][]byte{append(line, '\n')}
	if bulk != nil {
		parts = w.splice(line, bulk, msg)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	// Stamped before the write: the client may read the reply before this
	// goroutine runs again.
	at := time.Now()
	for _, p := range parts {
		if _, err := w.w.Write(p); err != nil {
			w.log.Debug("cannot write a message", "error", err)
			return err
		}
	}
	if c != nil && c.written != nil {
		c.written(at)
	}
	return nil
}

// splice returns line with the bulk text's encoding in place of the quoted
// placeholder, as the parts to write. The result is the last thing of a
// response, after the id the client chose, so the last occurrence is the
// one mcp-go marshalled from the result.
func (w *writer) splice(line []byte, bulk *bulkText, msg any) [][]byte {
	quoted := `"` + w.placeholder + `"`
	i := bytes.LastIndex(line, []byte(quoted))
	if i < 0 {
		// The handler's result did not reach the response as it was
		// returned: marshal it again with the text itself.
		bulk.result.Content = []mcp.Content{mcp.NewTextContent(bulk.text)}
		again, err := json.Marshal(msg)
		if err != nil {
			w.log.Error("cannot encode a message", "error", err)
			again = line
		}
		return [][]byte{append(again, '\n')}
	}
	rest := append(line[i+len(quoted):], '\n')
	return [][]byte{line[:i], bulk.encoded, rest}
}
