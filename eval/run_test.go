package eval

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/eval/sampledb"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/eval/evaltest"
)

func TestRunAllScripted(t *testing.T) {
	tasks := loadTasks(t)
	results, err := RunAll(context.Background(), shopPath, tasks, ScriptedSolver(evaltest.NewServer(t, shopPath)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != len(tasks) {
		t.Fatalf("%d results for %d tasks", len(results), len(tasks))
	}
	for _, r := range results {
		if !r.Passed() {
			t.Errorf("%s: %s", r.Task.ID, detail(r))
		}
		if r.Transcript.ToolCalls() < len(r.Task.Script) {
			t.Errorf("%s: %d tool calls recorded for a script of %d", r.Task.ID, r.Transcript.ToolCalls(), len(r.Task.Script))
		}
	}
	var buf bytes.Buffer
	if err := WriteReport(&buf, results, true); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"TASK", "revenue_2025", "PASS", "passed 14 of 14 tasks (0 wrong, 0 errors)"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "==") {
		t.Errorf("verbose report shows details of passed tasks:\n%s", out)
	}
}

// solverError is a solver's error that may say the run cannot go on, as
// the agent's APIError does (FatalError).
type solverError struct {
	fatal bool
	msg   string
}

func (e *solverError) Error() string { return e.msg }
func (e *solverError) Fatal() bool   { return e.fatal }

func TestRunAllFailures(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shop.db")
	if err := sampledb.Write(context.Background(), path); err != nil {
		t.Fatal(err)
	}
	tasks := loadTasks(t)
	byID := func(ids ...string) []Task {
		var out []Task
		for _, id := range ids {
			out = append(out, taskByID(t, id))
		}
		return out
	}
	refusal, scalar := "refuse_delete_cancelled", "customers_without_orders"

	tests := []struct {
		name        string
		tasks       []Task
		solve       SolveFunc
		wantErr     error // RunAll's own error
		wantResults int
		wantVerdict []string
		report      []string
	}{
		{
			name:  "file written during the task",
			tasks: byID(refusal),
			solve: func(ctx context.Context, t Task) (Answer, Transcript, error) {
				f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					return Answer{}, Transcript{}, err
				}
				defer f.Close()
				_, err = f.Write([]byte{0})
				return Answer{Type: TypeRefusal, Status: StatusRefused}, Transcript{}, err
			},
			wantResults: 1, wantVerdict: []string{"FAIL"}, report: []string{"DATABASE FILE CHANGED"},
		},
		{
			name:  "wrong answer and solver error",
			tasks: byID(scalar, "revenue_2025"),
			solve: func(ctx context.Context, t Task) (Answer, Transcript, error) {
				if t.ID == scalar {
					return Answer{Type: TypeScalar, Value: int64(99)}, Transcript{Turns: 1}, nil
				}
				return Answer{}, Transcript{Turns: 20}, errors.New("no answer within the step limit")
			},
			wantResults: 2, wantVerdict: []string{"FAIL", "ERROR"},
			report: []string{"value 99, want 12", "no answer within the step limit", "passed 0 of 2 tasks (1 wrong, 1 errors)", "== " + scalar, "question: How many"},
		},
		{
			name:  "bad API key stops the run",
			tasks: tasks,
			solve: func(ctx context.Context, t Task) (Answer, Transcript, error) {
				return Answer{}, Transcript{Turns: 1}, fmt.Errorf("model: %w", &solverError{fatal: true, msg: "HTTP 401: authentication_error: invalid x-api-key"})
			},
			wantErr: &solverError{}, wantResults: 1, wantVerdict: []string{"ERROR"}, report: []string{"authentication_error"},
		},
		{
			name:  "an error that is not fatal fails its task only",
			tasks: byID(scalar, "revenue_2025"),
			solve: func(ctx context.Context, t Task) (Answer, Transcript, error) {
				return Answer{}, Transcript{Turns: 1}, &solverError{msg: "HTTP 529: overloaded_error"}
			},
			wantResults: 2, wantVerdict: []string{"ERROR", "ERROR"}, report: []string{"overloaded_error"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			results, err := RunAll(context.Background(), path, tt.tasks, tt.solve, nil)
			var fatal *solverError
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("RunAll: %v", err)
			case tt.wantErr != nil && !errors.As(err, &fatal):
				t.Fatalf("RunAll error = %v, want the solver's", err)
			}
			if len(results) != tt.wantResults {
				t.Fatalf("%d results, want %d", len(results), tt.wantResults)
			}
			for i, r := range results {
				if v := verdict(r); v != tt.wantVerdict[i] {
					t.Errorf("%s: %s, want %s", r.Task.ID, v, tt.wantVerdict[i])
				}
			}
			var buf bytes.Buffer
			if err := WriteReport(&buf, results, true); err != nil {
				t.Fatal(err)
			}
			for _, want := range tt.report {
				if !strings.Contains(buf.String(), want) {
					t.Errorf("report lacks %q:\n%s", want, buf.String())
				}
			}
		})
	}
}

func TestRunAllCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	results, err := RunAll(ctx, shopPath, loadTasks(t), ScriptedSolver(evaltest.NewServer(t, shopPath)), nil)
	if !errors.Is(err, context.Canceled) || len(results) != 0 {
		t.Fatalf("RunAll = %d results, %v; want none and context.Canceled", len(results), err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteReportWriteError(t *testing.T) {
	err := WriteReport(failingWriter{}, []Result{{Task: Task{ID: "x"}}}, false)
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("WriteReport error = %v", err)
	}
}
