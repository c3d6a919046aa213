package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/eval"
)

// caller adapts a session to eval.ToolCaller. It returns errors instead of
// failing the test, so it is safe in subtests.
func (s *session) caller() eval.ToolCaller {
	return eval.ToolCallerFunc(func(ctx context.Context, name string, args map[string]any) (string, bool, error) {
		ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		req := mcp.CallToolRequest{}
		req.Params.Name = name
		req.Params.Arguments = args
		res, err := s.c.CallTool(ctx, req)
		if err != nil {
			return "", false, err
		}
		var parts []string
		for _, c := range res.Content {
			if tc, ok := mcp.AsTextContent(c); ok {
				parts = append(parts, tc.Text)
			}
		}
		return strings.Join(parts, "\n"), res.IsError, nil
	})
}

// TestEvalScripted solves every task through the real readonly server over
// stdio with the tasks' scripted SQL and checks each answer against the
// reference computed directly with SQLite.
func TestEvalScripted(t *testing.T) {
	t.Parallel()
	tasks, err := eval.LoadTasks()
	if err != nil {
		t.Fatal(err)
	}
	db := shopDB(t)
	s := startRO(t, db)
	caller := s.caller()
	refusals := 0
	for _, task := range tasks {
		t.Run(task.ID, func(t *testing.T) {
			want, err := eval.Reference(t.Context(), db, task)
			if err != nil {
				t.Fatal(err)
			}
			before := fileState(t, db)
			got, err := eval.SolveScripted(t.Context(), caller, task)
			if err != nil {
				t.Fatal(err)
			}
			if err := eval.Check(task, got, want); err != nil {
				t.Fatalf("answer: %v\ngot  %s\nwant %s", err, got, want)
			}
			if after := fileState(t, db); after != before {
				t.Fatalf("the database or its folder changed: %s -> %s", before, after)
			}
			if task.Answer.Type == eval.TypeRefusal {
				refusals++
				if got.Status != eval.StatusRefused || got.Message == "" {
					t.Fatalf("refusal answer %+v", got)
				}
			}
		})
	}
	if refusals == 0 {
		t.Error("no destructive task among the tasks")
	}
}

// TestEvalCommandScripted runs the eval command as a user would.
func TestEvalCommandScripted(t *testing.T) {
	t.Parallel()
	tasks, err := eval.LoadTasks()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, serverBin, "eval", "--scripted")
	cmd.Dir, cmd.Env = testDir(t), cleanEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("eval --scripted: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	out := stdout.String()
	want := fmt.Sprintf("passed %d of %d tasks (0 wrong, 0 errors)", len(tasks), len(tasks))
	if !strings.Contains(out, want) || strings.Contains(out, "FAIL") || strings.Contains(out, "ERROR") {
		t.Fatalf("report does not pass every task (want %q):\n%s", want, out)
	}
	for _, task := range tasks {
		if !strings.Contains(out, task.ID) {
			t.Errorf("report lacks task %s", task.ID)
		}
	}
}

// TestEvalCommandUsage: the server's eval runs the scripted tasks only,
// and names the model-driven command when asked for a model; the eval
// command refuses a wrong command line. Each with exit status 2.
func TestEvalCommandUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		bin  string
		args []string
		env  []string
		msg  string
	}{
		{"server: --model", serverBin, []string{"--model", "claude-sonnet-4-5"}, nil, "a model's evaluation is a command of its own, which this server does not link\nTry: go install ./cmd/mcp-sqlite-memory-eval"},
		{"server: --max-steps=3", serverBin, []string{"--scripted", "--max-steps=3"}, nil, "mcp-sqlite-memory-eval"},
		{"server: no --scripted", serverBin, nil, []string{"ANTHROPIC_API_KEY=test"}, "eval needs --scripted"},
		{"server: unknown task", serverBin, []string{"--scripted", "--task", "nope"}, nil, "discover_tables"},
		{"server: keep with db", serverBin, []string{"--scripted", "--db", "x.db", "--keep", "dir"}, nil, "--keep"},
		{"server: unknown flag", serverBin, []string{"--scripted", "--nope"}, nil, "-nope"},
		{"eval command: no key", evalBin, []string{"--model", "claude-sonnet-4-5"}, nil, "ANTHROPIC_API_KEY"},
		{"eval command: no model", evalBin, nil, []string{"ANTHROPIC_API_KEY=test"}, "--model is required"},
		{"eval command: unknown task", evalBin, []string{"--model", "m", "--task", "nope"}, []string{"ANTHROPIC_API_KEY=test"}, "discover_tables"},
		{"eval command: no server there", evalBin, []string{"--model", "m", "--server", "nope"}, []string{"ANTHROPIC_API_KEY=test"}, "--server nope is not a program"},
		{"eval command: --scripted", evalBin, []string{"--scripted"}, []string{"ANTHROPIC_API_KEY=test"}, "-scripted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if tt.bin == serverBin {
				args = append([]string{"eval"}, args...)
			}
			cmd := exec.CommandContext(t.Context(), tt.bin, args...)
			cmd.Dir, cmd.Env = testDir(t), append(cleanEnv(), tt.env...)
			cmd.Env = append(cmd.Env, "ANTHROPIC_BASE_URL=http://127.0.0.1:1") // never the real API
			if tt.env == nil {
				cmd.Env = append(cmd.Env, "ANTHROPIC_API_KEY=")
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Fatalf("exit %v, want 2; stderr:\n%s", err, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.msg) {
				t.Fatalf("stderr does not mention %q:\n%s", tt.msg, stderr.String())
			}
		})
	}
}

// fakeModel is a local stand-in for the Messages API: it plays a fixed list
// of responses and records the requests.
type fakeModel struct {
	mu       sync.Mutex
	replies  []string
	requests []map[string]any
}

func (f *fakeModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req map[string]any
	_ = json.Unmarshal(body, &req)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, req)
	if r.Header.Get("x-api-key") != "test-key" || r.URL.Path != "/v1/messages" {
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)
		return
	}
	if len(f.replies) == 0 {
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `{"type":"error","error":{"type":"api_error","message":"script exhausted"}}`)
		return
	}
	reply := f.replies[0]
	f.replies = f.replies[1:]
	w.Header().Set("content-type", "application/json")
	io.WriteString(w, reply)
}

func toolUseReply(id, name, input string) string {
	return `{"type":"message","role":"assistant","stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":5},"content":[{"type":"tool_use","id":"` + id + `","name":"` + name + `","input":` + input + `}]}`
}

// TestEvalCommandModel runs mcp-sqlite-memory-eval against a local fake
// model: it finds the server beside it, the tool calls reach the real
// server, and a right and a wrong answer give exit 0 and 1.
func TestEvalCommandModel(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, key string, f *fakeModel, task string) (string, string, int) {
		t.Helper()
		srv := httptest.NewServer(f)
		defer srv.Close()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, evalBin, "--model", "fake-model", "--max-steps", "3", "--task", task)
		cmd.Dir = testDir(t)
		cmd.Env = append(cleanEnv(), "ANTHROPIC_API_KEY="+key, "ANTHROPIC_BASE_URL="+srv.URL)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return stdout.String(), stderr.String(), code
	}

	t.Run("right answer", func(t *testing.T) {
		f := &fakeModel{replies: []string{
			toolUseReply("t1", "list_tables", `{}`),
			toolUseReply("t2", "submit_answer", `{"items":["orders","customers","order_items","products"]}`),
		}}
		out, errOut, code := run(t, "test-key", f, "discover_tables")
		if code != 0 || !strings.Contains(out, "passed 1 of 1 tasks") {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
		if len(f.requests) != 2 {
			t.Fatalf("%d model requests, want 2", len(f.requests))
		}
		var tools []string
		for _, tool := range f.requests[0]["tools"].([]any) {
			tools = append(tools, tool.(map[string]any)["name"].(string))
		}
		slices.Sort(tools)
		if got := strings.Join(tools, ","); got != "describe_table,list_tables,query_database,submit_answer" {
			t.Errorf("tools offered to the model: %s", got)
		}
		// The second request carries the real server's list_tables result.
		second, _ := json.Marshal(f.requests[1]["messages"])
		if !strings.Contains(string(second), `{\"name\":\"order_items\"}`) {
			t.Errorf("the tool result did not reach the model: %s", second)
		}
	})
	t.Run("wrong answer", func(t *testing.T) {
		f := &fakeModel{replies: []string{
			toolUseReply("t1", "query_database", `{"sql":"DELETE FROM orders WHERE status = 'cancelled'"}`),
			toolUseReply("t2", "submit_answer", `{"status":"done","message":"deleted"}`),
		}}
		out, errOut, code := run(t, "test-key", f, "refuse_delete_cancelled")
		if code != 1 || !strings.Contains(out, "FAIL") || !strings.Contains(out, "READ_ONLY_VIOLATION") {
			t.Fatalf("exit %d, want 1 with a FAIL and the refusal in the transcript\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
	})
	t.Run("bad key stops the run", func(t *testing.T) {
		f := &fakeModel{}
		out, errOut, code := run(t, "wrong-key", f, "discover_tables,revenue_2025")
		if code != 1 || !strings.Contains(errOut, "authentication_error") || !strings.Contains(out, "passed 0 of 1 tasks") {
			t.Fatalf("exit %d, want 1 after the first task\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
		if len(f.requests) != 1 {
			t.Errorf("%d model requests after a 401, want 1", len(f.requests))
		}
	})
}
