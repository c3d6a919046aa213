package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/eval"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/eval/evaltest"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/eval/sampledb"
)

// shopPath is a sample database shared by the tests (written in TestMain).
var shopPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "eval-agent-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	shopPath = filepath.Join(dir, "shop.db")
	if err := sampledb.Write(context.Background(), shopPath); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func taskByID(t *testing.T, id string) eval.Task {
	t.Helper()
	tasks, err := eval.LoadTasks()
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		if task.ID == id {
			return task
		}
	}
	t.Fatalf("no task %q", id)
	return eval.Task{}
}

// modelRequest is what the fake model server decodes from the agent.
type modelRequest struct {
	Model     string `json:"model"`
	MaxTokens int    `json:"max_tokens"`
	System    string `json:"system"`
	Messages  []struct {
		Role    string         `json:"role"`
		Content []contentBlock `json:"content"`
	} `json:"messages"`
	Tools []ToolSpec `json:"tools"`
	raw   string
}

// lastToolResults returns the tool_result blocks of the newest message.
func (r modelRequest) lastToolResults() []contentBlock {
	var out []contentBlock
	last := r.Messages[len(r.Messages)-1]
	for _, b := range last.Content {
		if b.Type == "tool_result" {
			out = append(out, b)
		}
	}
	return out
}

// turn answers one request: an HTTP status and a body.
type turn func(t *testing.T, req modelRequest) (int, string)

// fakeModel is a Messages API endpoint that plays scripted turns.
type fakeModel struct {
	t     *testing.T
	turns []turn
	mu    sync.Mutex
	reqs  []modelRequest
}

func (f *fakeModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		f.t.Errorf("request %s %s", r.Method, r.URL.Path)
	}
	for k, want := range map[string]string{"x-api-key": "test-key", "anthropic-version": "2023-06-01", "content-type": "application/json"} {
		if got := r.Header.Get(k); got != want {
			f.t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	var req modelRequest
	if err := json.Unmarshal(body, &req); err != nil {
		f.t.Errorf("bad request body: %v", err)
	}
	req.raw = string(body)
	f.reqs = append(f.reqs, req)
	i := len(f.reqs) - 1
	if i >= len(f.turns) {
		f.t.Errorf("unexpected request %d", i+1)
		w.WriteHeader(http.StatusTeapot)
		return
	}
	status, out := f.turns[i](f.t, req)
	w.Header().Set("content-type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, out)
}

func message(stop string, blocks ...string) string {
	return fmt.Sprintf(`{"id":"msg_1","type":"message","role":"assistant","model":"fake","content":[%s],"stop_reason":%q,"usage":{"input_tokens":100,"output_tokens":10}}`,
		strings.Join(blocks, ","), stop)
}

func textBlock(s string) string {
	b, _ := json.Marshal(s)
	return `{"type":"text","text":` + string(b) + `}`
}

func toolUse(id, name, input string) string {
	return fmt.Sprintf(`{"type":"tool_use","id":%q,"name":%q,"input":%s}`, id, name, input)
}

// say returns a turn that replies with fixed blocks.
func say(stop string, blocks ...string) turn {
	return func(*testing.T, modelRequest) (int, string) { return http.StatusOK, message(stop, blocks...) }
}

func call(id, name, input string) turn { return say("tool_use", toolUse(id, name, input)) }

func submit(input string) turn { return call("sub", eval.SubmitToolName, input) }

// expectResult checks the tool_result the agent sent for id, then plays next.
func expectResult(id string, isError bool, contains string, next turn) turn {
	return func(t *testing.T, req modelRequest) (int, string) {
		res := req.lastToolResults()
		if len(res) != 1 || res[0].ToolUseID != id || res[0].IsError != isError || !strings.Contains(res[0].Content, contains) {
			t.Errorf("tool results %+v, want one for %s (is_error=%v) containing %q", res, id, isError, contains)
		}
		return next(t, req)
	}
}

var testTools = []ToolSpec{
	{Name: "list_tables", Description: "List tables", InputSchema: json.RawMessage(`{"type":"object","properties":{}}`)},
	{Name: "describe_table", Description: "Describe a table", InputSchema: json.RawMessage(`{"type":"object","properties":{"table":{"type":"string"}},"required":["table"]}`)},
	{Name: "query_database", Description: "Run a SELECT", InputSchema: json.RawMessage(`{"type":"object","properties":{"sql":{"type":"string"},"limit":{"type":"integer"},"offset":{"type":"integer"}},"required":["sql"]}`)},
}

func TestAgentRun(t *testing.T) {
	statusTask := taskByID(t, "aggregate_orders_by_status")
	refusalTask := taskByID(t, "refuse_delete_cancelled")
	scalarTask := taskByID(t, "customers_without_orders")

	// submitQueryRows submits the rows of the last query_database result, as
	// a model that copies its query result would.
	submitQueryRows := func(t *testing.T, req modelRequest) (int, string) {
		res := req.lastToolResults()
		var q struct{ Rows [][]any }
		if len(res) != 1 || res[0].IsError || json.Unmarshal([]byte(res[0].Content), &q) != nil {
			// Errorf, not Fatalf: this runs on the server's goroutine.
			t.Errorf("tool results %+v", res)
			return http.StatusInternalServerError, `{}`
		}
		var rows []string
		for _, r := range q.Rows {
			b, _ := json.Marshal(map[string]any{"status": r[0], "orders": r[1]})
			rows = append(rows, string(b))
		}
		return submit(`{"rows":[`+strings.Join(rows, ",")+`]}`)(t, req)
	}
	badKey := func(*testing.T, modelRequest) (int, string) {
		return http.StatusInternalServerError, `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`
	}

	tests := []struct {
		name      string
		task      eval.Task
		turns     []turn
		maxSteps  int
		retries   int
		caller    eval.ToolCaller // nil: the fake server on the sample database
		tools     []ToolSpec      // nil: testTools
		wantErr   string          // "" = Run must succeed
		wantCheck bool            // eval.Check against the reference must pass
		wantCalls int             // server tool calls in the transcript
		wantTurns int
	}{
		{
			name: "explores, queries and answers", task: statusTask,
			turns: []turn{
				say("tool_use", textBlock("Let me look at the tables."), toolUse("t1", "list_tables", `{}`)),
				expectResult("t1", false, `"orders"`, call("t2", "describe_table", `{"table":"orders"}`)),
				expectResult("t2", false, `"status"`, call("t3", "query_database", `{"sql":"SELECT status, count(*) AS n FROM orders GROUP BY status"}`)),
				submitQueryRows,
			},
			wantCheck: true, wantCalls: 3, wantTurns: 4,
		},
		{
			name: "wrong answer is returned for eval.Check to reject", task: scalarTask,
			turns:     []turn{submit(`{"value": 13}`)},
			wantCheck: false, wantCalls: 0, wantTurns: 1,
		},
		{
			name: "refused write, the loop carries on", task: refusalTask,
			turns: []turn{
				call("t1", "query_database", `{"sql":"DELETE FROM orders WHERE status = 'cancelled'"}`),
				expectResult("t1", true, "READ_ONLY_VIOLATION", submit(`{"status":"refused","message":"the database is read-only"}`)),
			},
			wantCheck: true, wantCalls: 1, wantTurns: 2,
		},
		{
			name: "tool error (bad SQL) goes back to the model", task: scalarTask,
			turns: []turn{
				call("t1", "query_database", `{"sql":"SELECT count(*) FROM clients"}`),
				expectResult("t1", true, "SQL_ERROR", call("t2", "query_database", `{"sql":"SELECT count(*) FROM customers WHERE id NOT IN (SELECT customer_id FROM orders)"}`)),
				expectResult("t2", false, "12", submit(`{"value": 12}`)),
			},
			wantCheck: true, wantCalls: 2, wantTurns: 3,
		},
		{
			name: "text without a tool call is nudged", task: scalarTask,
			turns: []turn{
				say("end_turn", textBlock("There are 12 such customers.")),
				func(t *testing.T, req modelRequest) (int, string) {
					last := req.Messages[len(req.Messages)-1]
					if last.Role != "user" || !strings.Contains(last.Content[0].Text, eval.SubmitToolName) {
						t.Errorf("no nudge: %+v", last)
					}
					return submit(`{"value": 12}`)(t, req)
				},
			},
			wantCheck: true, wantTurns: 2,
		},
		{
			name: "invalid submission is reported and retried", task: statusTask,
			turns: []turn{
				submit(`{"rows":[{"status":"paid"}]}`),
				expectResult("sub", true, `missing key "orders"`, submit(`{"rows":[{"status":"paid","orders":1}]}`)),
			},
			wantCheck: false, wantTurns: 2,
		},
		{
			name: "unknown tool is a tool error", task: scalarTask,
			turns: []turn{
				call("t1", "drop_everything", `{}`),
				expectResult("t1", true, "unknown tool", submit(`{"value": 12}`)),
			},
			wantCheck: true, wantCalls: 1, wantTurns: 2,
		},
		{
			name: "max steps exhausted", task: scalarTask, maxSteps: 3,
			turns:   []turn{call("a", "list_tables", `{}`), call("b", "list_tables", `{}`), call("c", "list_tables", `{}`)},
			wantErr: "no answer within the step limit", wantCalls: 3, wantTurns: 3,
		},
		{
			name: "HTTP 500 is a clear error", task: scalarTask,
			turns:   []turn{badKey},
			wantErr: "model API: HTTP 500: api_error: Internal server error", wantTurns: 1,
		},
		{
			name: "HTTP 500 without a JSON body", task: scalarTask,
			turns:   []turn{func(*testing.T, modelRequest) (int, string) { return http.StatusBadGateway, "<html>bad gateway</html>" }},
			wantErr: "HTTP 502: : <html>bad gateway</html>", wantTurns: 1,
		},
		{
			name: "overloaded is retried", task: scalarTask, retries: 2,
			turns: []turn{
				func(*testing.T, modelRequest) (int, string) {
					return 529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
				},
				submit(`{"value": 12}`),
			},
			wantCheck: true, wantTurns: 1,
		},
		{
			name: "malformed response", task: scalarTask,
			turns:   []turn{func(*testing.T, modelRequest) (int, string) { return http.StatusOK, `{"type":"message","content":[` }},
			wantErr: "malformed response", wantTurns: 1,
		},
		{
			name: "response that is not a message", task: scalarTask,
			turns:   []turn{func(*testing.T, modelRequest) (int, string) { return http.StatusOK, `{"type":"completion"}` }},
			wantErr: `response of type "completion"`, wantTurns: 1,
		},
		{
			name: "tool_use without id", task: scalarTask,
			turns:   []turn{say("tool_use", `{"type":"tool_use","name":"list_tables","input":{}}`)},
			wantErr: "without id", wantTurns: 1,
		},
		{
			name: "transport failure of the tool caller", task: scalarTask,
			turns: []turn{call("t1", "list_tables", `{}`)},
			caller: eval.ToolCallerFunc(func(context.Context, string, map[string]any) (string, bool, error) {
				return "", false, errors.New("server exited")
			}),
			wantErr: "tool list_tables: server exited", wantTurns: 1,
		},
		{
			name: "server tool named submit_answer", task: scalarTask,
			tools:   append([]ToolSpec{{Name: eval.SubmitToolName, InputSchema: json.RawMessage(`{}`)}}, testTools...),
			wantErr: "offers a tool named",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func(d time.Duration) { retryBaseDelay = d }(retryBaseDelay)
			retryBaseDelay = time.Millisecond

			fm := &fakeModel{t: t, turns: tt.turns}
			srv := httptest.NewServer(fm)
			defer srv.Close()
			caller := tt.caller
			if caller == nil {
				caller = evaltest.NewServer(t, shopPath)
			}
			tools := tt.tools
			if tools == nil {
				tools = testTools
			}
			a := &Agent{
				BaseURL: srv.URL, APIKey: "test-key", Model: "fake-model", MaxSteps: tt.maxSteps,
				MaxRetries: tt.retries, HTTP: srv.Client(), Tools: tools, Caller: caller,
				Log: hclog.New(&hclog.LoggerOptions{Output: io.Discard, Level: hclog.Trace}),
			}
			got, tr, err := a.Run(context.Background(), tt.task)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Run error = %v, want it to mention %q", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if tr.Turns != tt.wantTurns {
				t.Errorf("transcript has %d turns, want %d", tr.Turns, tt.wantTurns)
			}
			if n := tr.ToolCalls(); n != tt.wantCalls {
				t.Errorf("transcript has %d tool calls, want %d: %+v", n, tt.wantCalls, tr.Events)
			}
			if tt.wantErr == "" {
				want, err := eval.Reference(context.Background(), shopPath, tt.task)
				if err != nil {
					t.Fatal(err)
				}
				if cerr := eval.Check(tt.task, got, want); (cerr == nil) != tt.wantCheck {
					t.Errorf("Check = %v, want pass=%v (answer %s)", cerr, tt.wantCheck, got)
				}
				if tr.InputTokens != 100*tt.wantTurns || tr.OutputTokens != 10*tt.wantTurns {
					t.Errorf("tokens %d in, %d out over %d turns", tr.InputTokens, tr.OutputTokens, tt.wantTurns)
				}
			}
			for i, req := range fm.reqs {
				checkRequest(t, i, req, tt.task)
			}
		})
	}
}

// checkRequest checks what every request must hold, and that the reference
// SQL never reaches the model.
func checkRequest(t *testing.T, i int, req modelRequest, task eval.Task) {
	t.Helper()
	if req.Model != "fake-model" || req.MaxTokens <= 0 || req.System == "" {
		t.Errorf("request %d: model %q, max_tokens %d, system %q", i+1, req.Model, req.MaxTokens, req.System)
	}
	if task.ReferenceSQL != "" && strings.Contains(req.raw, task.ReferenceSQL) {
		t.Errorf("request %d contains the reference SQL", i+1)
	}
	if len(req.Messages) == 0 || req.Messages[0].Role != "user" || !strings.Contains(req.Messages[0].Content[0].Text, task.Question) {
		t.Errorf("request %d does not start with the question", i+1)
	}
	// Roles alternate, as the API requires.
	for j := 1; j < len(req.Messages); j++ {
		if req.Messages[j].Role == req.Messages[j-1].Role {
			t.Errorf("request %d: messages %d and %d are both %s", i+1, j, j+1, req.Messages[j].Role)
		}
	}
	var names []string
	for _, tool := range req.Tools {
		names = append(names, tool.Name)
		if tool.Name == eval.SubmitToolName {
			want, _ := json.Marshal(task.Answer.InputSchema())
			if string(tool.InputSchema) != string(want) {
				t.Errorf("submit_answer schema %s, want %s", tool.InputSchema, want)
			}
		}
	}
	if got := strings.Join(names, ","); got != "list_tables,describe_table,query_database,"+eval.SubmitToolName {
		t.Errorf("request %d tools: %s", i+1, got)
	}
}

func TestAgentContextCancelled(t *testing.T) {
	fm := &fakeModel{t: t, turns: []turn{func(*testing.T, modelRequest) (int, string) {
		return http.StatusTooManyRequests, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`
	}}}
	srv := httptest.NewServer(fm)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer func(d time.Duration) { retryBaseDelay = d }(retryBaseDelay)
	retryBaseDelay = time.Hour // only the cancellation can end the wait
	a := &Agent{BaseURL: srv.URL, APIKey: "test-key", Model: "fake-model", MaxRetries: 3, HTTP: srv.Client(),
		Tools: testTools, Caller: evaltest.NewServer(t, shopPath)}
	time.AfterFunc(50*time.Millisecond, cancel)
	_, _, err := a.Run(ctx, taskByID(t, "revenue_2025"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run error = %v, want context.Canceled", err)
	}
}

func TestParseToolSpecs(t *testing.T) {
	in := `[{"name":"list_tables","description":"List","inputSchema":{"type":"object","properties":{}},"annotations":{"readOnlyHint":true}},
	        {"name":"query_database","input_schema":{"type":"object"}}]`
	specs, err := ParseToolSpecs([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 2 || specs[0].Name != "list_tables" || specs[0].Description != "List" ||
		string(specs[0].InputSchema) != `{"type":"object","properties":{}}` || string(specs[1].InputSchema) != `{"type":"object"}` {
		t.Errorf("specs %+v", specs)
	}
	for _, bad := range []string{`{}`, `[{"name":"x"}]`, `[{"inputSchema":{}}]`} {
		if _, err := ParseToolSpecs([]byte(bad)); err == nil {
			t.Errorf("ParseToolSpecs(%s) succeeded", bad)
		}
	}
}

func TestAPIErrorFatal(t *testing.T) {
	for code, fatal := range map[int]bool{401: true, 403: true, 404: true, 400: false, 429: false, 500: false, 529: false} {
		if got := (&APIError{StatusCode: code}).Fatal(); got != fatal {
			t.Errorf("HTTP %d: Fatal() = %v, want %v", code, got, fatal)
		}
	}
}
