package mcpstdio

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// testServer is an MCP server with the tools the tests call.
func testServer() *mcpserver.MCPServer {
	s := mcpserver.NewMCPServer("stdio-test", "1", mcpserver.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("echo", mcp.WithString("text")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(req.GetString("text", "")), nil
	})
	s.AddTool(mcp.NewTool("fail"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, errors.New("handler error")
	})
	s.AddTool(mcp.NewTool("drop"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		CallFrom(ctx).DropResponse()
		return mcp.NewToolResultError("CANCELLED: dropped"), nil
	})
	s.AddTool(mcp.NewTool("progress"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if err := CallFrom(ctx).Notify(string(mcp.MethodNotificationProgress), map[string]any{"progressToken": "t", "progress": 1}); err != nil {
			return nil, err
		}
		return mcp.NewToolResultText("done"), nil
	})
	s.AddTool(mcp.NewTool("bulk", mcp.WithString("text")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		text := req.GetString("text", "")
		encoded, _ := json.Marshal(text)
		return CallFrom(ctx).BulkText(text, encoded), nil
	})
	return s
}

// transcript sends lines to a server, reading after each the number of
// lines it answers with, and returns what was read.
type script []struct {
	in      string
	answers int
}

func runScript(t *testing.T, ours bool, sc script) []string {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := testServer()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		if ours {
			done <- Serve(ctx, s, inR, outW, Options{})
		} else {
			done <- mcpserver.NewStdioServer(s).Listen(ctx, inR, outW)
		}
	}()
	out := bufio.NewReader(outR)
	var lines []string
	for _, step := range sc {
		if _, err := io.WriteString(inW, step.in+"\n"); err != nil {
			t.Fatal(err)
		}
		for range step.answers {
			line, err := out.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			lines = append(lines, line)
		}
	}
	inW.Close()
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
	cancel()
	return lines
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// What the loop writes is, byte for byte, what mcp-go's StdioServer writes
// for the same input: answers, errors, and silence.
func TestWireMatchesMCPGoStdioServer(t *testing.T) {
	ping := func(id int) string { return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, id) }
	sc := script{
		{initialize, 1},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, 0},
		{ping(2), 1},
		{`{"jsonrpc":"2.0","id":"s-3","method":"tools/list"}`, 1},
		{`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"text":"<a & b> \"q\" \u2028 é"}}}`, 1},
		{`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"nope"}}`, 1},
		{`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"fail"}}`, 1},
		{`not json`, 1},
		{``, 1},
		{`{"jsonrpc":"2.0","id":7,"method":"no/such/method"}`, 1},
		{`{"jsonrpc":"1.0","id":8,"method":"ping"}`, 1},
		{`{"jsonrpc":"2.0","id":99,"result":{}}`, 0}, // a response to no request
		{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":42}}`, 0},
		{ping(9), 1},
	}
	mcpgo, ours := runScript(t, false, sc), runScript(t, true, sc)
	if len(mcpgo) != len(ours) {
		t.Fatalf("%d lines from mcp-go, %d from the loop", len(mcpgo), len(ours))
	}
	for i := range mcpgo {
		if mcpgo[i] != ours[i] {
			t.Errorf("line %d:\nmcp-go %s   ours %s", i, mcpgo[i], ours[i])
		}
	}
}

// A dropped call writes nothing; a bulk text arrives as mcp-go would have
// written it; a call's notification comes before its response.
func TestCallOutcomes(t *testing.T) {
	big := strings.Repeat("row,<b>&amp;\"x\"\n", 5000)
	sc := script{
		{initialize, 1},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, 0},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"drop"}}`, 0},
		{`{"jsonrpc":"2.0","id":3,"method":"ping"}`, 1},
		{`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"progress"}}`, 2},
	}
	lines := runScript(t, true, sc)
	if !strings.Contains(lines[1], `"id":3`) {
		t.Errorf("after the dropped call came %s", lines[1])
	}
	if !strings.Contains(lines[2], `"method":"notifications/progress"`) || !strings.Contains(lines[3], `"id":4`) {
		t.Errorf("progress then response, got:\n%s%s", lines[2], lines[3])
	}
	want, _ := json.Marshal(mcp.NewJSONRPCResultResponse(mcp.NewRequestId(int64(5)), mcp.NewToolResultText(big)))
	arg, _ := json.Marshal(big)
	lines = runScript(t, true, script{{initialize, 1}, {`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"bulk","arguments":{"text":` + string(arg) + `}}}`, 1}})
	if lines[1] != string(want)+"\n" {
		t.Errorf("bulk response is %.200s..., want %.200s...", lines[1], want)
	}
}

func TestNoNotificationAfterTheResponse(t *testing.T) {
	var out bytes.Buffer
	w := newWriter(&out, nil)
	c := &Call{out: w}
	if err := c.Notify("notifications/progress", map[string]any{"progress": 1}); err != nil {
		t.Fatal(err)
	}
	before := out.Len()
	if before == 0 {
		t.Fatal("the notification before the response was not written")
	}
	_ = w.write(c, mcp.NewJSONRPCResultResponse(mcp.NewRequestId(int64(1)), mcp.NewToolResultText("ok")))
	after := out.Len()
	if err := c.Notify("notifications/progress", map[string]any{"progress": 2}); err != nil {
		t.Fatal(err)
	}
	if after == before || out.Len() != after {
		t.Fatalf("wrote %d, %d, %d bytes:\n%s", before, after, out.Len(), out.String())
	}
}

// A nil Call (an in-process request) answers the normal way.
func TestNilCall(t *testing.T) {
	var c *Call
	c.DropResponse()
	res := c.BulkText("text", []byte(`"text"`))
	if got := res.Content[0].(mcp.TextContent).Text; got != "text" {
		t.Fatalf("text %q", got)
	}
	if CallFrom(context.Background()) != nil {
		t.Fatal("a call in a bare context")
	}
}

// connect serves s over pipes and returns an mcp-go client of it.
func connect(t *testing.T, s *mcpserver.MCPServer, opts ...client.ClientOption) *client.Client {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, s, inR, outW, Options{}); outW.Close() }()
	c := client.NewClient(transport.NewIO(outR, inW, io.NopCloser(strings.NewReader(""))), opts...)
	t.Cleanup(func() {
		c.Close()
		inW.Close()
		cancel()
		<-done
	})
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

type elicitor struct{ asked chan mcp.ElicitationRequest }

func (e *elicitor) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	e.asked <- req
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
		Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"confirm": true},
	}}, nil
}

// confirmParams asks the user to confirm, as a destructive tool would.
var confirmParams = mcp.ElicitationParams{
	Message: "Drop table t?",
	RequestedSchema: map[string]any{
		"type": "object", "properties": map[string]any{"confirm": map[string]any{"type": "boolean"}},
	},
}

// answer renders an elicitation result for the tool's reply.
func answer(res *mcp.ElicitationResult) *mcp.CallToolResult {
	if res == nil {
		return mcp.NewToolResultError("no answer")
	}
	content, _ := res.Content.(map[string]any)
	return mcp.NewToolResultText(fmt.Sprintf("%s %v", res.Action, content["confirm"]))
}

// A tool that asks the client (elicitation/create) while it runs gets the
// answer: the request goes out through the loop's writer and the client's
// response, read by the loop, reaches the waiting handler. Two ways, as
// mcp-go offers them: MCPServer.RequestElicitation (protocols before
// 2026-07-28), and an input_required result, which mcp-go turns into that
// request for a legacy client and the client answers itself on 2026-07-28.
func TestElicitationRoundTrip(t *testing.T) {
	tests := []struct {
		name     string
		protocol string
		tool     mcpserver.ToolHandlerFunc
	}{
		{"RequestElicitation", "2025-06-18", func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := mcpserver.ServerFromContext(ctx).RequestElicitation(ctx, mcp.ElicitationRequest{Params: confirmParams})
			if err != nil {
				return mcp.NewToolResultError(err.Error()), nil
			}
			return answer(res), nil
		}},
		{"input_required/legacy client", "2025-06-18", inputRequired},
		{"input_required/2026-07-28 client", "", inputRequired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testServer()
			s.AddTool(mcp.NewTool("confirm"), tt.tool)
			e := &elicitor{asked: make(chan mcp.ElicitationRequest, 1)}
			c := connect(t, s, client.WithElicitationHandler(e), client.WithProtocolVersion(tt.protocol))
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			init := mcp.InitializeRequest{}
			init.Params.ProtocolVersion = tt.protocol
			init.Params.ClientInfo = mcp.Implementation{Name: "t", Version: "1"}
			if _, err := c.Initialize(ctx, init); err != nil {
				t.Fatal(err)
			}
			req := mcp.CallToolRequest{}
			req.Params.Name = "confirm"
			res, err := c.CallTool(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Content[0].(mcp.TextContent).Text; res.IsError || got != "accept true" {
				t.Fatalf("tool answered %q (error %v)", got, res.IsError)
			}
			select {
			case asked := <-e.asked:
				if asked.Params.Message != confirmParams.Message {
					t.Errorf("the client was asked %q", asked.Params.Message)
				}
			default:
				t.Error("the client's elicitation handler was not called")
			}
		})
	}
}

func inputRequired(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if res := mcpserver.ElicitationResponse(req.Params.InputResponses, "confirm"); res != nil {
		return answer(res), nil
	}
	return mcpserver.NewInputRequestBuilder("state").Elicit("confirm", confirmParams).ToolResult(), nil
}

// A client's error answer to an elicitation reaches the handler as an
// error, and a call waiting for an answer ends with its context.
func TestElicitationFailures(t *testing.T) {
	var out bytes.Buffer
	sess := newSession(newWriter(&out, nil))
	errs := make(chan error, 1)
	go func() {
		_, err := sess.RequestElicitation(context.Background(), mcp.ElicitationRequest{Params: confirmParams})
		errs <- err
	}()
	for !strings.Contains(syncRead(sess, &out), `"method":"elicitation/create"`) {
		time.Sleep(time.Millisecond)
	}
	if !sess.route(decoded(t, `{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"user closed the dialog"}}`)) {
		t.Fatal("the error response was not routed")
	}
	if err := <-errs; err == nil || !strings.Contains(err.Error(), "user closed the dialog") {
		t.Fatalf("error %v", err)
	}
	if sess.route(decoded(t, `{"jsonrpc":"2.0","id":1,"result":{}}`)) {
		t.Fatal("a second response to the same request was routed")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := sess.RequestElicitation(ctx, mcp.ElicitationRequest{Params: confirmParams}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}
}

// syncRead reads what the session's writer wrote so far.
func syncRead(s *session, b *bytes.Buffer) string {
	s.out.mu.Lock()
	defer s.out.mu.Unlock()
	return b.String()
}

func TestToolCallNames(t *testing.T) {
	tests := []struct {
		line  string
		names []string
	}{
		{`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_query","arguments":{"query":"SELECT 1"}}}`, []string{"read_query"}},
		{`{"method": "tools/call", "params": {"name" : "verify_chain"}, "jsonrpc": "2.0", "id": 1}`, []string{"verify_chain"}},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"_meta":{"clientInfo":{"name":"e2e","version":"1"}},"name":"describe_table","arguments":{"name":"items"}}}`, []string{"e2e", "describe_table", "items"}},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, nil},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}`, nil},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a\"b"}}`, nil},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":42}}`, nil},
		{`{"method":"tools/call","params":{"name":"read_q`, nil},
	}
	for _, tt := range tests {
		names, ok := ToolCallNames(tt.line)
		if !slices.Equal(names, tt.names) || ok != (tt.names != nil) {
			t.Errorf("ToolCallNames(%s) = %q, %v; want %q", tt.line, names, ok, tt.names)
		}
	}
}

// decoded is line as the read loop decodes it.
func decoded(t *testing.T, line string) *message {
	t.Helper()
	var m message
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatal(err)
	}
	return &m
}
