package server

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// noResponseKey marks, in a result's _meta, a call that must get no
// response: one the client cancelled or shutdown stopped (MCP). mcp-go
// 1.2.1 writes a response whenever a handler returns, so the handler
// returns a result carrying this mark and outWriter drops it on its way
// out. In-process clients (the call command) do see it, with its text.
const noResponseKey = "io.github.mcp-sqlite-memory/no-response"

// noResponse is the result of a call that gets no response.
func noResponse(reason string) *mcp.CallToolResult {
	res := mcp.NewToolResultError("CANCELLED: " + reason)
	res.Meta = &mcp.Meta{AdditionalFields: map[string]any{noResponseKey: true}}
	return res
}

// maxMarkedResponse bounds what outWriter inspects: a marked response is
// a few hundred bytes, so longer lines are written without a look.
const maxMarkedResponse = 4096

// outWriter is the stdio output that mcp-go and the progress notifications
// share. mcp-go writes each message with one Write; outWriter keeps each
// whole, and drops responses marked with noResponseKey.
type outWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (o *outWriter) Write(p []byte) (int, error) {
	if marked(p) {
		return len(p), nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.w.Write(p)
}

// marked reports whether p is a response whose result carries the mark.
// The mark is looked for in _meta only: text an agent put into a result's
// content cannot suppress it.
func marked(p []byte) bool {
	if len(p) > maxMarkedResponse || !bytes.Contains(p, []byte(noResponseKey)) {
		return false
	}
	var msg struct {
		Result struct {
			Meta map[string]any `json:"_meta"`
		} `json:"result"`
	}
	if json.Unmarshal(p, &msg) != nil {
		return false
	}
	on, _ := msg.Result.Meta[noResponseKey].(bool)
	return on
}

// notify writes one JSON-RPC notification.
func (o *outWriter) notify(method string, params map[string]any) error {
	b, err := json.Marshal(map[string]any{"jsonrpc": mcp.JSONRPC_VERSION, "method": method, "params": params})
	if err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	_, err = o.w.Write(append(b, '\n'))
	return err
}
