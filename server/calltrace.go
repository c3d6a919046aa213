package server

import (
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server/mcpstdio"
)

// callTracer writes one JSON line of stamps per tool call (ipc.CallTrace)
// once its reply is written: MCP_SQLITE_CALLTRACE, for measuring where a
// call's time goes (docs/performance.md).
type callTracer struct {
	mu sync.Mutex
	w  io.Writer
}

// TraceCalls makes the server write each tool call's stamps to w, one JSON
// line per call (see ipc.CallTrace). Call it before Serve.
func (s *Server) TraceCalls(w io.Writer) { s.tracer = &callTracer{w: w} }

// begin returns the trace of a call that started at start, or nil when
// tracing is off. Its line is written once stdio has written the reply;
// a call that did not come through stdio (HTTP) writes it when the
// handler returns.
func (t *callTracer) begin(tool string, start time.Time, stdio *mcpstdio.Call) *ipc.CallTrace {
	if t == nil {
		return nil
	}
	tr := &ipc.CallTrace{Tool: tool, Handler: start.UnixNano()}
	if stdio != nil {
		read, dispatched, running := stdio.Received()
		tr.Received, tr.Dispatched, tr.Running = read.UnixNano(), dispatched.UnixNano(), running.UnixNano()
		stdio.OnWritten(func(at time.Time) {
			tr.Written = at.UnixNano()
			t.write(tr)
		})
	}
	return tr
}

// end stamps the handler's return, and writes a trace no writer will.
func (t *callTracer) end(tr *ipc.CallTrace, stdio *mcpstdio.Call) {
	if tr == nil {
		return
	}
	tr.Returned = ipc.Now()
	if stdio == nil {
		t.write(tr)
	}
}

func (t *callTracer) write(tr *ipc.CallTrace) {
	line, err := json.Marshal(tr)
	if err != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	_, _ = t.w.Write(append(line, '\n'))
}
