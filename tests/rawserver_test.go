package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// rawServer is a server process a test started over pipes of its own, for
// what the stdio client of start does not let a test do: send exact
// JSON-RPC lines, close stdin, signal or kill the process in the middle of
// a call, or run a launcher in front of the server.
type rawServer struct {
	tb  testing.TB
	cmd *exec.Cmd
	in  io.WriteCloser // the process's stdin
	out *bufio.Reader  // its stdout: one JSON-RPC message a line

	waitOnce sync.Once
	waitErr  error
}

// rawInitialize is the initialize request startRaw sends.
const rawInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// rawStopGrace is how long the cleanup lets a process end after its stdin
// closed (a server stops in well under a second) before it kills it.
var rawStopGrace = 10 * time.Second

// pipeServer starts cmd, which the caller has set up (arguments,
// environment, stderr, process group), with its stdin and stdout as pipes.
// The test's cleanup closes stdin, waits up to rawStopGrace for the process
// to end, then kills it and waits for it.
func pipeServer(tb testing.TB, cmd *exec.Cmd) *rawServer {
	tb.Helper()
	in, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	r := &rawServer{tb: tb, cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}
	tb.Cleanup(func() {
		_ = in.Close()
		ended := make(chan struct{})
		go func() { _ = r.wait(); close(ended) }()
		select {
		case <-ended:
		case <-time.After(rawStopGrace):
			_ = cmd.Process.Kill()
			<-ended
		}
	})
	return r
}

// startRaw starts the server on db with flags and opens an MCP session
// with raw lines (initialize, its answer, notifications/initialized).
func startRaw(tb testing.TB, db string, flags ...string) *rawServer {
	tb.Helper()
	return startRawInit(tb, db, rawInitialize, flags...)
}

// startRawInit is startRaw with its own initialize request line.
func startRawInit(tb testing.TB, db, initialize string, flags ...string) *rawServer {
	tb.Helper()
	cmd := exec.Command(serverBin, append([]string{"--db", db}, flags...)...)
	serverStarted(db, cmd)
	r := pipeServer(tb, cmd)
	r.handshake(initialize)
	return r
}

// handshake sends the initialize request line, reads its answer and sends
// notifications/initialized.
func (r *rawServer) handshake(initialize string) {
	r.tb.Helper()
	r.send(initialize)
	r.read()
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// wait waits for the process to end and returns what exec.Cmd.Wait did;
// any number of goroutines may call it. Read stdout to its end first:
// the process's end closes it.
func (r *rawServer) wait() error {
	r.waitOnce.Do(func() { r.waitErr = r.cmd.Wait() })
	return r.waitErr
}

func (r *rawServer) send(line string) {
	if _, err := io.WriteString(r.in, line+"\n"); err != nil {
		r.tb.Fatal(err)
	}
}

func (r *rawServer) read() string {
	line, err := r.out.ReadString('\n')
	if err != nil {
		r.tb.Fatal(err)
	}
	return line
}

// callLine sends a tools/call request without reading its answer.
func (r *rawServer) callLine(id int, tool string, args map[string]any) {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": args}})
	r.send(string(b))
}

// call sends a tools/call request and returns the next line, its answer
// when the server sends nothing else between.
func (r *rawServer) call(id int, tool string, args map[string]any) string {
	r.callLine(id, tool, args)
	return r.read()
}

// readUntil reads messages until the response with id, and returns the
// ids of the responses read on the way.
func (r *rawServer) readUntil(id int) (seen []int) {
	for {
		var msg struct {
			ID *int `json:"id"`
		}
		line := r.read()
		if json.Unmarshal([]byte(line), &msg) != nil || msg.ID == nil {
			continue // a notification
		}
		seen = append(seen, *msg.ID)
		if *msg.ID == id {
			return seen
		}
	}
}

// session opens an MCP session over the pipes with mcp-go's client, named
// clientName, for a test that drives a process it may kill with the
// usual session helpers. The pipes are the client's from then on.
func (r *rawServer) session(t *testing.T, db, clientName string, timeout time.Duration) (*session, error) {
	t.Helper()
	c := client.NewClient(transport.NewIO(r.out, r.in, nil))
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: clientName, Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		return nil, err
	}
	s := &session{t: t, c: c, db: db, cmd: r.cmd}
	s.guardLocks()
	return s, nil
}
