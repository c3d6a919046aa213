package eval

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/hashicorp/go-hclog"
)

// SolveFunc answers one task; Agent.Run is one, ScriptedSolver makes another.
type SolveFunc func(ctx context.Context, t Task) (Answer, Transcript, error)

// ScriptedSolver returns a SolveFunc that runs SolveScripted through caller
// and records the tool calls in the transcript.
func ScriptedSolver(caller ToolCaller) SolveFunc {
	return func(ctx context.Context, t Task) (Answer, Transcript, error) {
		rec := &recorder{next: caller}
		a, err := SolveScripted(ctx, rec, t)
		return a, Transcript{Events: rec.events}, err
	}
}

type recorder struct {
	next   ToolCaller
	mu     sync.Mutex
	events []Event
}

func (r *recorder) CallTool(ctx context.Context, name string, args map[string]any) (string, bool, error) {
	text, isErr, err := r.next.CallTool(ctx, name, args)
	r.mu.Lock()
	defer r.mu.Unlock()
	in, _ := json.Marshal(args)
	r.events = append(r.events, Event{Kind: EventToolCall, Tool: name, Input: in, Output: text, IsError: isErr})
	return text, isErr, err
}

// Result is the outcome of one task.
type Result struct {
	Task       Task
	Want       Answer
	Got        Answer
	Transcript Transcript
	SolveErr   error // the solver failed (API, transport, step limit)
	CheckErr   error // the answer is wrong
	// FileChanged is set when the database file's bytes differ after the
	// task: the read-only profile must never write.
	FileChanged bool
	Duration    time.Duration
}

// Passed reports whether the task was solved, correctly, without a write.
func (r Result) Passed() bool { return r.SolveErr == nil && r.CheckErr == nil && !r.FileChanged }

// FatalError is a solver error after which no other task can be solved
// either (the model API refused the key): RunAll stops on one whose Fatal
// says so.
type FatalError interface {
	error
	Fatal() bool
}

// RunAll computes each task's reference on dbPath, solves it with solve and
// checks the answer; it also hashes the database file around every task. A
// solver error fails that task only, unless the context ends or the model API
// says the key, permission or model is wrong (a FatalError, such as the
// agent package's APIError): then RunAll stops and returns the results so
// far with the error. log may be nil.
func RunAll(ctx context.Context, dbPath string, tasks []Task, solve SolveFunc, log hclog.Logger) ([]Result, error) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	results := make([]Result, 0, len(tasks))
	for _, t := range tasks {
		if err := ctx.Err(); err != nil {
			return results, err
		}
		want, err := Reference(ctx, dbPath, t)
		if err != nil {
			return results, err
		}
		before, err := fileHash(dbPath)
		if err != nil {
			return results, err
		}
		start := time.Now()
		got, tr, solveErr := solve(ctx, t)
		r := Result{Task: t, Want: want, Got: got, Transcript: tr, SolveErr: solveErr, Duration: time.Since(start)}
		after, err := fileHash(dbPath)
		if err != nil {
			return results, err
		}
		r.FileChanged = before != after
		if solveErr == nil {
			r.CheckErr = Check(t, got, want)
		}
		results = append(results, r)
		log.Info("task done", "task", t.ID, "passed", r.Passed(), "duration", r.Duration.Round(time.Millisecond))

		var fatal FatalError
		if errors.As(solveErr, &fatal) && fatal.Fatal() {
			return results, solveErr
		}
		if ctx.Err() != nil {
			return results, ctx.Err()
		}
	}
	return results, nil
}

func fileHash(path string) ([sha256.Size]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return [sha256.Size]byte{}, fmt.Errorf("eval: %w", err)
	}
	return sha256.Sum256(b), nil
}

// Summary counts passed, failed (wrong answer or changed file) and errored
// (solver error) tasks.
func Summary(results []Result) (passed, failed, errored int) {
	for _, r := range results {
		switch {
		case r.Passed():
			passed++
		case r.SolveErr != nil:
			errored++
		default:
			failed++
		}
	}
	return passed, failed, errored
}

// WriteReport writes one line per task and a summary line to w. With verbose
// set it adds, for every task that did not pass, the expected and given
// answers and the transcript.
func WriteReport(w io.Writer, results []Result, verbose bool) error {
	ew := &errWriter{w: w}
	tw := tabwriter.NewWriter(ew, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tRESULT\tTURNS\tTOOL CALLS\tTIME\tDETAIL")
	var in, out int
	for _, r := range results {
		in += r.Transcript.InputTokens
		out += r.Transcript.OutputTokens
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\n", r.Task.ID, verdict(r), r.Transcript.Turns,
			r.Transcript.ToolCalls(), r.Duration.Round(10*time.Millisecond), oneLine(detail(r), 160))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	passed, failed, errored := Summary(results)
	fmt.Fprintf(ew, "\npassed %d of %d tasks (%d wrong, %d errors)", passed, len(results), failed, errored)
	if in+out > 0 {
		fmt.Fprintf(ew, "; tokens: %d in, %d out", in, out)
	}
	fmt.Fprintln(ew)
	if verbose {
		for _, r := range results {
			if !r.Passed() {
				writeDetail(ew, r)
			}
		}
	}
	return ew.err
}

func verdict(r Result) string {
	switch {
	case r.Passed():
		return "PASS"
	case r.SolveErr != nil:
		return "ERROR"
	default:
		return "FAIL"
	}
}

func detail(r Result) string {
	var parts []string
	if r.FileChanged {
		parts = append(parts, "DATABASE FILE CHANGED")
	}
	if r.SolveErr != nil {
		parts = append(parts, r.SolveErr.Error())
	}
	if r.CheckErr != nil {
		parts = append(parts, r.CheckErr.Error())
	}
	return strings.Join(parts, "; ")
}

func writeDetail(w io.Writer, r Result) {
	fmt.Fprintf(w, "\n== %s (%s)\nquestion: %s\nwant: %s\ngot:  %s\n", r.Task.ID, verdict(r), r.Task.Question, r.Want, r.Got)
	if d := detail(r); d != "" {
		fmt.Fprintf(w, "why:  %s\n", d)
	}
	for _, e := range r.Transcript.Events {
		turn := "   "
		if e.Turn > 0 {
			turn = fmt.Sprintf("%2d.", e.Turn)
		}
		switch e.Kind {
		case EventText:
			fmt.Fprintf(w, "  %s text: %s\n", turn, oneLine(e.Output, 300))
		case EventNudge:
			fmt.Fprintf(w, "  %s (no tool call; asked for %s)\n", turn, SubmitToolName)
		default:
			mark := ""
			if e.IsError {
				mark = " ERROR"
			}
			fmt.Fprintf(w, "  %s %s %s ->%s %s\n", turn, e.Tool, oneLine(string(e.Input), 300), mark, oneLine(e.Output, 300))
		}
	}
}

func oneLine(s string, n int) string {
	return clip(strings.Join(strings.Fields(s), " "), n)
}

// errWriter keeps the first write error so the report code stays linear.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}
