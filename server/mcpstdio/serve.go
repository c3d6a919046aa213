// Package mcpstdio serves an mcp-go MCPServer over stdio (one JSON-RPC
// message a line) with a read loop and a writer of its own.
//
// mcp-go's StdioServer marshals and writes every response itself, so a
// server that must drop a response (a cancelled call gets none, MCP says)
// or write a large text faster than encoding/json does can only patch the
// bytes on their way out. Here every message read is handed to
// MCPServer.HandleMessage, and every message written goes through one
// writer that knows the call it belongs to (Call): answered, dropped,
// answered with an already-encoded bulk text, or a progress notification
// before the answer. The bytes are those mcp-go's StdioServer writes.
//
// Server-to-client requests (elicitation/create, sampling/createMessage,
// roots/list) work as over mcp-go's own stdio transport: the session
// registered with the MCPServer implements mcp-go's session interfaces, so
// a tool handler calls MCPServer.RequestElicitation (or RequestSampling,
// RequestRoots) with its context, or returns an input_required result
// (server.NewInputRequestBuilder), which mcp-go turns into those requests
// for clients older than protocol 2026-07-28. The request goes out through
// the writer and the client's response, read by the loop, is routed back
// to the waiting handler by its id.
//
// It lives under server, which alone uses it, and imports nothing of the
// project (mcp-go only): the tools and their wording stay in server.
package mcpstdio

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// Options configure Serve.
type Options struct {
	// Log receives what cannot be written to the client (nil: discarded).
	Log hclog.Logger
	// InputEnded, if set, is called once when reading the input fails or
	// it ends (the host closed stdin), before the calls still running are
	// cancelled: they can tell why they stop.
	InputEnded func()
	// ToolCall, if set, is called as soon as a line that looks like a
	// tools/call request is read, before it is parsed, with the names in
	// it, the tool's among them (see ToolCallNames): the server readies
	// what the call will need meanwhile. It is a hint: the call may turn
	// out to be something else.
	ToolCall func(names []string)
}

// Serve reads JSON-RPC messages from r and serves them with srv until r
// ends (it returns nil) or ctx ends (it returns ctx's error). Requests run
// on goroutines of their own, notifications in order on the read loop (so
// notifications/cancelled reaches a running call at once). Before it
// returns, the contexts of the calls still running are cancelled and their
// handlers waited for.
func Serve(ctx context.Context, srv *mcpserver.MCPServer, r io.Reader, w io.Writer, opt Options) error {
	log := opt.Log
	if log == nil {
		log = hclog.NewNullLogger()
	}
	out := newWriter(w, log)
	sess := newSession(out)
	if err := srv.RegisterSession(ctx, sess); err != nil {
		return fmt.Errorf("register session: %w", err)
	}
	defer srv.UnregisterSession(ctx, sess.SessionID())
	ctx = srv.WithContext(ctx, sess)
	// Ending this context when the loop ends releases every handler still
	// waiting on it, so that none outlives its session.
	ctx, cancelRequests := context.WithCancel(ctx)
	defer cancelRequests()

	var requests sync.WaitGroup
	defer requests.Wait()
	requests.Go(func() { sess.forwardNotifications(ctx) })
	// The reader may still be blocked in Read after Serve returns: once
	// stopped is set it starts no request, so none outlives Serve.
	var mu sync.Mutex
	stopped := false
	defer func() { mu.Lock(); stopped = true; mu.Unlock() }()
	rd := &reader{
		ctx: ctx, r: bufio.NewReader(r), readErr: make(chan error, 1), ended: opt.InputEnded,
		handle:   func(l line) func() { return dispatch(ctx, srv, sess, out, l) },
		toolCall: opt.ToolCall,
		admit: func() bool {
			mu.Lock()
			defer mu.Unlock()
			if stopped {
				return false
			}
			requests.Add(1)
			return true
		},
		done: requests.Done,
	}
	go rd.loop()
	readErr := rd.readErr
	select {
	case <-ctx.Done():
		cancelRequests()
		return ctx.Err()
	case err := <-readErr:
		cancelRequests()
		if err == io.EOF {
			return nil
		}
		log.Error("reading input", "error", err)
		return err
	}
}

// line is one message read, and when.
type line struct {
	text string
	read time.Time
}

// reader reads the input a line at a time. A request runs on the
// goroutine that read its line, which first starts another to go on
// reading: handing the request to a goroutine of its own instead cost a
// thread wake-up (0.1-0.17 ms on the 2-core VM after an idle pause)
// before every call. Only one goroutine reads at a time.
type reader struct {
	ctx     context.Context
	r       *bufio.Reader
	readErr chan error
	ended   func()
	// handle serves a line and returns, for a request, what runs it.
	handle func(line) func()
	// toolCall is Options.ToolCall.
	toolCall func(names []string)
	// admit counts a request in (false: Serve is returning), done out.
	admit func() bool
	done  func()
}

// loop reads lines until reading fails or ctx ends, then sends the error.
// It may stay blocked in Read after Serve returns (stdin cannot be
// interrupted), as mcp-go's reader does.
func (rd *reader) loop() {
	for {
		text, err := rd.r.ReadString('\n')
		if err != nil {
			// A last line without its newline is incomplete: dropped.
			if rd.ended != nil {
				rd.ended()
			}
			rd.readErr <- err
			return
		}
		read := time.Now()
		if rd.ctx.Err() != nil {
			return
		}
		if rd.toolCall != nil {
			if names, ok := ToolCallNames(text); ok {
				rd.toolCall(names)
			}
		}
		run := rd.handle(line{text, read})
		if run == nil {
			continue
		}
		if !rd.admit() {
			return
		}
		go rd.loop()
		run()
		rd.done()
		return
	}
}

// dispatch serves one line: a response to one of the session's own
// requests is routed to its caller; a notification runs here; for a
// request it returns what runs it, with a Call.
func dispatch(ctx context.Context, srv *mcpserver.MCPServer, sess *session, out *writer, l line) (request func()) {
	raw := json.RawMessage(l.text)
	var m message
	if err := json.Unmarshal(raw, &m); err != nil {
		_ = out.write(nil, errorResponse(nil, mcp.PARSE_ERROR, "Parse error"))
		return nil
	}
	if sess.route(&m) {
		return nil
	}
	if m.isRequest() {
		c := &Call{out: out, received: l.read, dispatched: time.Now()}
		return func() {
			c.running = time.Now()
			var resp any
			if r := handle(withCall(ctx, c), srv, &m, raw, out.log); r != nil {
				resp = r
			}
			_ = out.write(c, resp)
		}
	}
	if resp := handle(ctx, srv, &m, raw, out.log); resp != nil {
		_ = out.write(nil, resp)
	}
	return nil
}

// handle runs HandleMessage; a panic becomes an internal error for a
// request and nothing for a notification.
func handle(ctx context.Context, srv *mcpserver.MCPServer, m *message, raw json.RawMessage, log hclog.Logger) (resp mcp.JSONRPCMessage) {
	defer func() {
		if r := recover(); r != nil {
			log.Error("panic in a message handler", "panic", fmt.Sprint(r))
			resp = nil
			if m.isRequest() {
				resp = errorResponse(m.id(), mcp.INTERNAL_ERROR, fmt.Sprintf("internal panic: %v", r))
			}
		}
	}()
	return srv.HandleMessage(ctx, raw)
}

func errorResponse(id any, code int, message string) mcp.JSONRPCMessage {
	return mcp.JSONRPCError{
		JSONRPC: mcp.JSONRPC_VERSION,
		ID:      mcp.NewRequestId(id),
		Error:   mcp.NewJSONRPCErrorDetails(code, message, nil),
	}
}

// ToolCallNames reports whether line looks like a tools/call request and
// the strings that follow a "name" key in it (at most 8): the tool's name
// is one of them ({"method":"tools/call","params":{"name":...}}), beside
// such names as a client's in _meta or an argument's. It is a quick look,
// not a parse: the line is parsed after, and a wrong guess only readies
// something the call does not use.
func ToolCallNames(line string) ([]string, bool) {
	if !strings.Contains(line, `"tools/call"`) {
		return nil, false
	}
	var names []string
	for rest := line; len(names) < 8; {
		i := strings.Index(rest, `"name"`)
		if i < 0 {
			break
		}
		rest = rest[i+len(`"name"`):]
		v := strings.TrimLeft(rest, " \t")
		if !strings.HasPrefix(v, ":") {
			continue
		}
		v = strings.TrimLeft(v[1:], " \t")
		if !strings.HasPrefix(v, `"`) {
			continue
		}
		v = v[1:]
		if end := strings.IndexAny(v, `"\`); end >= 0 && v[end] == '"' {
			names = append(names, v[:end])
		}
	}
	return names, len(names) > 0
}
