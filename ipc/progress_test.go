package ipc

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
)

// progressWorker plays the workers that write progress frames; modes not
// listed here do nothing.
func progressWorker(mode string, req *Request) int {
	frame := func(phase Phase, done, total int64) {
		_ = WriteProgress(os.Stdout, Progress{Phase: phase, Done: done, Total: total})
	}
	answer := func() { _ = WriteResponse(os.Stdout, &Response{Version: Version, OK: true, Text: "done", Rows: 1}) }
	switch mode {
	case "progress":
		for i := range 3 {
			frame(PhaseSearch, int64(i+1)*10, 30)
		}
		answer()
	case "snapshot-slow":
		// A snapshot longer than the statement's timeout, then a quick
		// statement: within budget.
		frame(PhaseSnapshot, 0, 100)
		time.Sleep(time.Duration(req.Limits.TimeoutMS)*time.Millisecond + 500*time.Millisecond)
		frame(PhaseSnapshot, 100, 100)
		frame(PhaseStatement, 0, 0)
		answer()
	case "snapshot-hang":
		frame(PhaseSnapshot, 0, 100)
		time.Sleep(time.Hour)
	case "statement-hang":
		frame(PhaseSnapshot, 0, 100)
		frame(PhaseStatement, 0, 0)
		time.Sleep(time.Hour)
	case "progress-memory":
		// The memory alert among progress frames.
		frame(PhaseSearch, 10, 30)
		frame(PhaseMemoryHigh, 48<<20, 128<<20)
		frame(PhaseSearch, 20, 30)
		answer()
	case "snapshot-memory-hang":
		frame(PhaseSnapshot, 0, 100)
		frame(PhaseMemoryHigh, 48<<20, 128<<20)
		time.Sleep(time.Hour)
	case "progress-with-fields":
		fmt.Fprintf(os.Stdout, `{"v":%d,"ok":true,"progress":{"phase":"search","done":1}}`+"\n", Version)
		answer()
	case "progress-huge":
		fmt.Fprintf(os.Stdout, `{"v":%d,"progress":{"phase":"%s","done":1}}`+"\n", Version, strings.Repeat("x", 4096))
		answer()
	}
	return 0
}

func TestSpawnerProgress(t *testing.T) {
	old := KillGrace
	KillGrace = 50 * time.Millisecond
	t.Cleanup(func() { KillGrace = old })
	snap := &Snapshot{Dir: "d", Stem: "x", Keep: 1, TimeoutMS: 20_000}
	tests := []struct {
		name, mode string
		timeoutMS  int64
		snapshot   *Snapshot
		wantText   string // the answer's text
		// Or no answer: a RunError of this reason, phase and budget, whose
		// Err has wantErr.
		wantReason RunReason
		wantPhase  Phase
		wantBudget time.Duration
		wantErr    string
		wantFrames []Progress
	}{
		{name: "frames arrive in order", mode: "progress", timeoutMS: 20_000, wantText: "done",
			wantFrames: []Progress{{PhaseSearch, 10, 30}, {PhaseSearch, 20, 30}, {PhaseSearch, 30, 30}}},
		// The statement's budget covers the worker's start (slow under
		// -race), not the snapshot after it.
		{name: "snapshot has its own budget", mode: "snapshot-slow", timeoutMS: 2000, snapshot: snap, wantText: "done",
			wantFrames: []Progress{{PhaseSnapshot, 0, 100}, {PhaseSnapshot, 100, 100}, {Phase: PhaseStatement}}},
		{name: "snapshot budget ends", mode: "snapshot-hang", timeoutMS: 20_000,
			snapshot: &Snapshot{Dir: "d", Stem: "x", Keep: 1, TimeoutMS: 300}, wantReason: RunTimeout, wantPhase: PhaseSnapshot, wantBudget: 300 * time.Millisecond},
		{name: "statement timeout restarts after the snapshot", mode: "statement-hang", timeoutMS: 300, snapshot: snap,
			wantReason: RunTimeout, wantPhase: PhaseStatement, wantBudget: 300 * time.Millisecond},
		{name: "unasked snapshot frame buys no time", mode: "snapshot-hang", timeoutMS: 300,
			wantReason: RunTimeout, wantPhase: PhaseStatement, wantBudget: 300 * time.Millisecond},
		// The alert is the front's to keep: no callback sees it.
		{name: "memory alert reaches no callback", mode: "progress-memory", timeoutMS: 20_000, wantText: "done",
			wantFrames: []Progress{{PhaseSearch, 10, 30}, {PhaseSearch, 20, 30}}},
		// Nor does it move the kill timer: the snapshot's budget runs on,
		// and a worker killed at it timed out.
		{name: "memory alert moves no kill timer", mode: "snapshot-memory-hang", timeoutMS: 20_000,
			snapshot: &Snapshot{Dir: "d", Stem: "x", Keep: 1, TimeoutMS: 300}, wantReason: RunTimeout, wantPhase: PhaseSnapshot, wantBudget: 300 * time.Millisecond,
			wantFrames: []Progress{{PhaseSnapshot, 0, 100}}},
		{name: "progress frame with response fields", mode: "progress-with-fields", timeoutMS: 20_000,
			wantReason: RunBadAnswer, wantPhase: PhaseStatement, wantErr: "progress frame with response fields"},
		{name: "huge progress frame", mode: "progress-huge", timeoutMS: 20_000,
			wantReason: RunBadAnswer, wantPhase: PhaseStatement, wantErr: "progress frame larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := helperSpawner(t, tt.mode, 0)
			var mu sync.Mutex
			var got []Progress
			resp, err := s.RunWithProgress(context.Background(), &Request{Op: OpQuery, DB: "x.db", Snapshot: tt.snapshot, Limits: Limits{TimeoutMS: tt.timeoutMS}}, func(p Progress) {
				mu.Lock()
				got = append(got, p)
				mu.Unlock()
			})
			if tt.wantReason == 0 {
				if err != nil || !resp.OK || resp.Text != tt.wantText {
					t.Fatalf("got %+v, %v, want ok %q", resp, err, tt.wantText)
				}
			} else {
				code := errcode.WorkerFailed
				if tt.wantReason == RunTimeout {
					code = errcode.Timeout
				}
				re := wantRunError(t, resp, err, tt.wantReason, tt.wantPhase, code)
				if re.Budget != tt.wantBudget {
					t.Fatalf("budget %s, want %s", re.Budget, tt.wantBudget)
				}
				if tt.wantErr != "" && (re.Err == nil || !strings.Contains(re.Err.Error(), tt.wantErr)) {
					t.Fatalf("Err %v, want one containing %q", re.Err, tt.wantErr)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if tt.wantFrames != nil && !reflect.DeepEqual(got, tt.wantFrames) {
				t.Fatalf("frames %+v, want %+v", got, tt.wantFrames)
			}
		})
	}
}

func TestRequestTooLargeIsRefusedBeforeAWorker(t *testing.T) {
	// A worker that would answer anything: the refusal must come first.
	s := helperSpawner(t, "echo", 0)
	resp, err := s.Run(context.Background(), &Request{Op: OpQuery, DB: "x.db", SQL: "SELECT '" + strings.Repeat("a", MaxRequestBytes) + "'"})
	if resp != nil || errcode.Of(err) != errcode.InvalidArgument || !strings.Contains(err.Error(), "nothing was run") {
		t.Fatalf("got %+v, %v", resp, err)
	}
	// Escaping counts: 2 MB of control characters is 12 MB of JSON.
	resp, err = s.Run(context.Background(), &Request{Op: OpQuery, DB: "x.db", SQL: strings.Repeat("\x01", 2<<20)})
	if resp != nil || errcode.Of(err) != errcode.InvalidArgument {
		t.Fatalf("escaped text: got %+v, %v", resp, err)
	}
}

func TestReadResponseProgress(t *testing.T) {
	v := Version
	tests := []struct {
		name, in  string
		wantErr   string
		wantCount int
	}{
		{"no frames", fmt.Sprintf(`{"v":%d,"ok":true,"text_bytes":2}`+"\nhi", v), "", 0},
		{"two frames", fmt.Sprintf(`{"v":%d,"progress":{"phase":"search","done":1,"total":9}}`+"\n"+`{"v":%d,"progress":{"phase":"search","done":2}}`+"\n"+`{"v":%d,"ok":true}`+"\n", v, v, v), "", 2},
		{"frame of another version", fmt.Sprintf(`{"v":1,"progress":{"phase":"search","done":1}}`+"\n"+`{"v":%d,"ok":true}`+"\n", v), "progress frame of protocol version 1", 0},
		{"negative count", fmt.Sprintf(`{"v":%d,"progress":{"phase":"search","done":-1}}`+"\n", v), "negative", 0},
		{"frame then nothing", fmt.Sprintf(`{"v":%d,"progress":{"phase":"search","done":1}}`+"\n", v), "empty frame", 1},
		{"unknown field in frame", fmt.Sprintf(`{"v":%d,"progress":{"phase":"search","done":1,"evil":2}}`+"\n", v), "unknown field", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := 0
			_, err := ReadResponseProgress(strings.NewReader(tt.in), func(Progress) { n++ })
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
			if n != tt.wantCount {
				t.Fatalf("%d frames passed on, want %d", n, tt.wantCount)
			}
		})
	}
}

// FuzzReadResponse feeds the front's response decoder any bytes: it must
// never panic, and a response it accepts must survive WriteResponse and a
// second read unchanged.
func FuzzReadResponse(f *testing.F) {
	v := Version
	f.Add([]byte(fmt.Sprintf(`{"v":%d,"ok":true,"text_bytes":5,"rows":1}`+"\nhello", v)))
	f.Add([]byte(fmt.Sprintf(`{"v":%d,"progress":{"phase":"snapshot","done":0,"total":10}}`+"\n"+`{"v":%d,"ok":false,"code":"TIMEOUT","message":"m"}`+"\n", v, v)))
	f.Add([]byte(fmt.Sprintf(`{"v":%d,"ok":true,"text_bytes":2,"text_is_json":true,"detail":{"a":[1]}}`+"\n{}", v)))
	f.Add([]byte(fmt.Sprintf(`{"v":%d,"progress":null,"ok":true}`+"\n", v)))
	f.Add([]byte(fmt.Sprintf(`{"v":%d,"progress":{"phase":"memory_high","done":50331648,"total":134217728}}`+"\n"+`{"v":%d,"ok":true}`+"\n", v, v)))
	f.Add([]byte("{\"v\":2,\"progress\":{}}\n\xff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		resp, err := ReadResponseProgress(bytes.NewReader(data), func(p Progress) {
			if p.Done < 0 || p.Total < 0 {
				t.Fatalf("negative progress passed on: %+v", p)
			}
		})
		if err != nil {
			if resp != nil {
				t.Fatalf("error %v with a response", err)
			}
			return
		}
		var buf bytes.Buffer
		if err := WriteResponse(&buf, resp); err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		again, err := ReadResponse(&buf)
		if err != nil {
			t.Fatalf("re-encoded response refused: %v", err)
		}
		if again.Text != resp.Text || again.OK != resp.OK || again.Code != resp.Code || again.Message != resp.Message || again.Rows != resp.Rows {
			t.Fatalf("round trip changed the response:\n got %+v\nwant %+v", again, resp)
		}
	})
}
