package ipc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
)

// The test binary re-runs itself as a misbehaving worker when this variable
// names a behaviour (go-plugin's helper-process pattern).
const helperEnv = "IPC_TEST_WORKER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helperWorker(mode))
	}
	os.Exit(m.Run())
}

// helperWorker plays one kind of worker, good or bad.
func helperWorker(mode string) int {
	switch mode {
	case "noready":
		// A worker that predates the ready byte, or a foreign one.
	case "sleepy":
		// Never answers (CheckWorker's bound).
		time.Sleep(time.Hour)
	case "v4worker":
		// A worker of protocol version 4 (the last without Speaks): the
		// bytes the real one (commit d65e8a6) wrote to CheckWorker.
		os.Stdout.WriteString("\x06" + `{"v":4,"ok":false,"code":"INVALID_ARGUMENT","message":"request has protocol version 1048576; this worker speaks versions 1 to 4 (the server and worker binaries must match)","rows":0}` + "\n")
		return 0
	case "nospeaks":
		// A frame of this version without the versions it speaks.
		env, _ := DecodeWorkerEnv(os.Getenv)
		_ = env.SignalReady(os.Stdout)
		_ = WriteResponse(os.Stdout, &Response{Version: Version, Code: "INVALID_ARGUMENT", Message: "no"})
		return 0
	case "laterworker", "rangeworker":
		// Workers of a later protocol: one that speaks only its own
		// version, and one that also speaks this one.
		speaks := Versions{Version + 1, Version + 1}
		if mode == "rangeworker" {
			speaks.Min = Version
		}
		env, _ := DecodeWorkerEnv(os.Getenv)
		_ = env.SignalReady(os.Stdout)
		_ = WriteResponse(os.Stdout, &Response{Version: Version + 1, Code: "INVALID_ARGUMENT", Message: "no such version", Speaks: &speaks})
		return 0
	case "dieready":
		// Dies after saying it is ready, while it waits as a standby.
		env, _ := DecodeWorkerEnv(os.Getenv)
		_ = env.SignalReady(os.Stdout)
		return 3
	default:
		env, _ := DecodeWorkerEnv(os.Getenv)
		_ = env.SignalReady(os.Stdout)
	}
	req, err := ReadRequest(os.Stdin)
	if err != nil {
		_ = WriteResponse(os.Stdout, Failure(err))
		return 0
	}
	switch mode {
	case "echo", "noready":
		_ = WriteResponse(os.Stdout, &Response{Version: Version, OK: true, Text: "echo: " + req.SQL, Rows: 1})
	case "pid":
		// Answers with its pid, after req.Limit milliseconds.
		time.Sleep(time.Duration(req.Limit) * time.Millisecond)
		_ = WriteResponse(os.Stdout, &Response{Version: Version, OK: true, Text: strconv.Itoa(os.Getpid())})
	case "hang":
		time.Sleep(time.Hour)
	case "crash":
		fmt.Fprintln(os.Stderr, "panic: something broke")
		return 2
	case "oom":
		// The memory alert, then a death as the runtime's.
		_ = WriteProgress(os.Stdout, Progress{Phase: PhaseMemoryHigh, Done: 48 << 20, Total: 128 << 20})
		return 2
	case "oomtext":
		// The runtime's words without the alert: the front reads no text.
		fmt.Fprintln(os.Stderr, "fatal error: runtime: out of memory")
		return 2
	case "oomanswer":
		// The alert, then an answer: the answer counts.
		_ = WriteProgress(os.Stdout, Progress{Phase: PhaseMemoryHigh, Done: 48 << 20, Total: 128 << 20})
		_ = WriteResponse(os.Stdout, &Response{Version: Version, OK: true, Text: "fits"})
	case "oomsilent":
		// The alert, then an exit 0 without an answer: no death of
		// memory exhaustion, which the runtime ends with status 2.
		_ = WriteProgress(os.Stdout, Progress{Phase: PhaseMemoryHigh, Done: 48 << 20, Total: 128 << 20})
		return 0
	case "garbage":
		fmt.Fprint(os.Stdout, "this is not json\x00\x01")
	case "huge":
		_ = WriteResponse(os.Stdout, &Response{Version: Version, OK: true, Text: strings.Repeat("x", 2<<20)})
	case "hugeheader":
		fmt.Fprintf(os.Stdout, `{"v":%d,"ok":true,"message":"%s"}`+"\n", Version, strings.Repeat("x", 2<<20))
	case "short":
		fmt.Fprintf(os.Stdout, `{"v":%d,"ok":true,"text_bytes":100}`+"\nonly this", Version)
	case "version":
		_ = WriteResponse(os.Stdout, &Response{Version: Version + 1, OK: true, Text: "from the future"})
	case "nocode":
		_ = WriteResponse(os.Stdout, &Response{Version: Version, OK: false, Message: "oops"})
	case "silent":
		return 0
	case "logs":
		hclog.New(&hclog.LoggerOptions{Output: os.Stderr, JSONFormat: true}).Info("hello from the worker", "n", 3)
		_ = WriteResponse(os.Stdout, &Response{Version: Version, OK: true, Text: "ok"})
	default:
		return progressWorker(mode, req)
	}
	return 0
}

func helperSpawner(t *testing.T, mode string, standby int) *Spawner {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSpawner(Config{
		Path: self, Args: []string{"-test.run=^$"}, // GORACE: a race-enabled child otherwise sleeps 1 s at exit.
		Env:        append(os.Environ(), helperEnv+"="+mode, "GORACE=atexit_sleep_ms=0"),
		MaxWorkers: 2, Standby: standby, Log: hclog.NewNullLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func TestSpawnerMisbehavingWorkers(t *testing.T) {
	old, oldMax := KillGrace, MaxResponseBytes
	KillGrace, MaxResponseBytes = 50*time.Millisecond, 1<<20
	t.Cleanup(func() { KillGrace, MaxResponseBytes = old, oldMax })

	// A worker's own answer is a Response; a worker that gave none is a
	// RunError whose fields say why (the server words it).
	tests := []struct {
		mode       string
		wantText   string // the answer's text, for a worker that answers
		wantReason RunReason
		wantCode   errcode.Code
		wantErr    string // in RunError.Err, for a bad answer
	}{
		{mode: "echo", wantText: "echo: SELECT 1"},
		{mode: "logs", wantText: "ok"},
		{mode: "hang", wantReason: RunTimeout, wantCode: errcode.Timeout},
		{mode: "crash", wantReason: RunNoAnswer, wantCode: errcode.WorkerFailed},
		{mode: "oom", wantReason: RunOutOfMemory, wantCode: errcode.ResourceLimit},
		{mode: "oomtext", wantReason: RunNoAnswer, wantCode: errcode.WorkerFailed},
		{mode: "oomanswer", wantText: "fits"},
		{mode: "oomsilent", wantReason: RunNoAnswer, wantCode: errcode.WorkerFailed},
		{mode: "garbage", wantReason: RunBadAnswer, wantCode: errcode.WorkerFailed, wantErr: "invalid character"},
		{mode: "huge", wantReason: RunBadAnswer, wantCode: errcode.WorkerFailed, wantErr: "larger than"},
		{mode: "hugeheader", wantReason: RunBadAnswer, wantCode: errcode.WorkerFailed, wantErr: "larger than"},
		{mode: "short", wantReason: RunBadAnswer, wantCode: errcode.WorkerFailed, wantErr: "payload cut short"},
		{mode: "version", wantReason: RunBadAnswer, wantCode: errcode.WorkerFailed, wantErr: "protocol version"},
		{mode: "nocode", wantReason: RunBadAnswer, wantCode: errcode.WorkerFailed, wantErr: "without an error code"},
		{mode: "silent", wantReason: RunNoAnswer, wantCode: errcode.WorkerFailed},
	}
	for _, tt := range tests {
		for _, standby := range []int{0, 1} {
			t.Run(fmt.Sprintf("%s/standby=%d", tt.mode, standby), func(t *testing.T) {
				s := helperSpawner(t, tt.mode, standby)
				// Twice: the spawner must serve again after a failure.
				for range 2 {
					// Only the hanging worker meets its timeout; the others
					// get room for a slow start on a busy machine.
					timeout := int64(20_000)
					if tt.mode == "hang" {
						timeout = 300
					}
					resp, err := s.Run(context.Background(), &Request{Op: OpQuery, DB: "x.db", SQL: "SELECT 1", Limits: Limits{TimeoutMS: timeout, MemoryMB: 128}})
					if tt.wantReason == 0 {
						if err != nil || !resp.OK || resp.Text != tt.wantText {
							t.Fatalf("got %+v, %v, want ok %q", resp, err, tt.wantText)
						}
						continue
					}
					re := wantRunError(t, resp, err, tt.wantReason, PhaseStatement, tt.wantCode)
					if tt.mode == "hang" && re.Budget != 300*time.Millisecond {
						t.Fatalf("budget %s, want 300ms", re.Budget)
					}
					if tt.wantErr != "" && (re.Err == nil || !strings.Contains(re.Err.Error(), tt.wantErr)) {
						t.Fatalf("Err %v, want one containing %q", re.Err, tt.wantErr)
					}
					if (tt.wantReason == RunNoAnswer || tt.wantReason == RunBadAnswer || tt.wantReason == RunOutOfMemory) && re.Exit == "" {
						t.Fatalf("no exit status in %v", re)
					}
					if tt.wantReason == RunOutOfMemory && re.MemoryMB != 128 {
						t.Fatalf("MemoryMB %d, want the request's 128", re.MemoryMB)
					}
				}
			})
		}
	}
}

// wantRunError checks that a call got no answer but a RunError of reason
// in phase, with code, and returns it.
func wantRunError(t *testing.T, resp *Response, err error, reason RunReason, phase Phase, code errcode.Code) *RunError {
	t.Helper()
	var re *RunError
	if !errors.As(err, &re) {
		t.Fatalf("got %+v, %v; want a RunError", resp, err)
	}
	if resp != nil {
		t.Fatalf("a response %+v with %v", resp, err)
	}
	if re.Reason != reason || re.Phase != phase || !errors.Is(err, code) || errcode.Of(err) != code {
		t.Fatalf("got %v (code %s), want %s in phase %s, %s", re, errcode.Of(err), reason, phase, code)
	}
	return re
}

func TestSpawnerTimeoutIsPrompt(t *testing.T) {
	s := helperSpawner(t, "hang", 1)
	start := time.Now()
	resp, err := s.Run(context.Background(), &Request{Op: OpQuery, DB: "x.db", Limits: Limits{TimeoutMS: 200}})
	wantRunError(t, resp, err, RunTimeout, PhaseStatement, errcode.Timeout)
	// Generous bound: this only guards against waiting for the hour-long sleep.
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("timeout took %s", d)
	}
}

func TestSpawnerCancelKills(t *testing.T) {
	s := helperSpawner(t, "hang", 0)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(100 * time.Millisecond); cancel() }()
	resp, err := s.Run(ctx, &Request{Op: OpQuery, DB: "x.db", Limits: Limits{TimeoutMS: 60_000}})
	wantRunError(t, resp, err, RunCancelled, PhaseStatement, errcode.Cancelled)
}

func TestReadRequest(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"ok", `{"v":6,"op":"query","db":"a.db","caps":{"max_rows":1,"max_result_bytes":1,"max_cell_chars":1,"max_update_rows":1},"limits":{"timeout_ms":1,"memory_mb":1,"max_growth_mb":1,"sandbox":false}}`, ""},
		{"empty", ``, "empty frame"},
		{"not json", `hello`, "bad request frame"},
		{"no version", `{"op":"query","db":"a.db"}`, "protocol version 0"},
		{"the previous version", `{"v":5,"op":"query","db":"a.db"}`, "request has protocol version 5; this worker speaks versions 6 to 6"},
		{"a later version", `{"v":7,"op":"query","db":"a.db"}`, "protocol version 7"},
		{"judge", `{"v":6,"op":"query","db":"a.db","judge":true,"cluster":true,"read_only_file":true}`, ""},
		{"judge of another op", `{"v":6,"op":"get_schema","db":"a.db","judge":true}`, "judge is for op"},
		{"judge with a preview", `{"v":6,"op":"query","db":"a.db","judge":true,"preview":{}}`, "judge is for op"},
		{"unknown op", `{"v":6,"op":"format_disk","db":"a.db"}`, "unknown op"},
		{"unknown field", `{"v":6,"op":"query","db":"a.db","evil":1}`, "unknown field"},
		{"two documents", `{"v":6,"op":"query","db":"a.db"} {"v":6}`, "more than one"},
		{"no db", `{"v":6,"op":"query"}`, "no db"},
		{"too big", `{"v":6,"op":"query","db":"` + strings.Repeat("a", MaxRequestBytes) + `"}`, "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadRequest(strings.NewReader(tt.in))
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || errcode.Of(err) != errcode.InvalidArgument {
				t.Fatalf("got %v, want INVALID_ARGUMENT containing %q", err, tt.want)
			}
		})
	}
}

func TestErrorCodeSurvivesResponse(t *testing.T) {
	resp := Failure(errcode.New(errcode.Protected, "memory_events is managed by the server"))
	r, w := io.Pipe()
	go func() { _ = WriteResponse(w, resp); w.Close() }()
	got, err := ReadResponse(r)
	if err != nil {
		t.Fatal(err)
	}
	if errcode.Of(got.Err()) != errcode.Protected || got.Err().Error() != "PROTECTED_TABLE: memory_events is managed by the server" {
		t.Fatalf("got %v", got.Err())
	}
}
