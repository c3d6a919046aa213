package ipc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
)

// Payloads on both sides of the bulk size cross intact, CSV and JSON, and
// ReadResponse stops at the payload's end.
func TestResponsePayloadRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, bulkPayload - 1, bulkPayload, bulkPayload + 1, 3 << 20} {
		for _, isJSON := range []bool{false, true} {
			text := strings.Repeat("a,\"b\"\né\n", n/9+1)[:n]
			resp := &Response{Version: Version, OK: true, Text: text, Rows: 7}
			if isJSON {
				text = `"` + strings.Repeat("x", max(n-2, 0)) + `"`
				resp.Text, resp.JSON = text, json.RawMessage(text)
			}
			r, w := io.Pipe()
			go func() {
				_ = WriteResponse(w, resp)
				_, _ = io.WriteString(w, "trailing bytes the reader must not consume")
				w.Close()
			}()
			got, err := ReadResponse(r)
			if err != nil {
				t.Fatalf("%d bytes, json %v: %v", n, isJSON, err)
			}
			if got.Text != text || got.Rows != 7 || (got.JSON != nil) != isJSON || (isJSON && string(got.JSON) != text) {
				t.Fatalf("%d bytes, json %v: got %d bytes of text, json %d bytes", n, isJSON, len(got.Text), len(got.JSON))
			}
			_, _ = io.Copy(io.Discard, r)
		}
	}
}

// TestMemoryAlertFrame: the memory alert crosses as a progress frame of
// its own phase, with its counts, ahead of the response; a bad one is
// refused as any bad progress frame is.
func TestMemoryAlertFrame(t *testing.T) {
	alert := Progress{Phase: PhaseMemoryHigh, Done: 48 << 20, Total: 128 << 20}
	var buf strings.Builder
	if err := WriteProgress(&buf, alert); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf(`{"v":%d,"progress":{"phase":"memory_high","done":50331648,"total":134217728}}`+"\n", Version); buf.String() != want {
		t.Fatalf("frame %q, want %q", buf.String(), want)
	}
	var got []Progress
	resp, err := ReadResponseProgress(strings.NewReader(buf.String()+fmt.Sprintf(`{"v":%d,"ok":false,"code":"WORKER_FAILED","message":"m"}`+"\n", Version)), func(p Progress) { got = append(got, p) })
	if err != nil || resp.Code != "WORKER_FAILED" || len(got) != 1 || got[0] != alert {
		t.Fatalf("got %+v, %v, frames %+v", resp, err, got)
	}

	v := Version
	for _, tt := range []struct{ name, in, wantErr string }{
		{"older version", `{"v":3,"progress":{"phase":"memory_high","done":1,"total":2}}`, "progress frame of protocol version 3"},
		{"negative count", fmt.Sprintf(`{"v":%d,"progress":{"phase":"memory_high","done":-1,"total":2}}`, v), "negative"},
		{"response fields", fmt.Sprintf(`{"v":%d,"code":"RESOURCE_LIMIT","progress":{"phase":"memory_high","done":1,"total":2}}`, v), "response fields"},
		{"unknown field", fmt.Sprintf(`{"v":%d,"progress":{"phase":"memory_high","done":1,"total":2,"budget":3}}`, v), "unknown field"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n := 0
			_, err := ReadResponseProgress(strings.NewReader(tt.in+"\n"+fmt.Sprintf(`{"v":%d,"ok":true}`+"\n", v)), func(Progress) { n++ })
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || n != 0 {
				t.Fatalf("error %v after %d frames, want %q before any", err, n, tt.wantErr)
			}
		})
	}
}

// TestJudged: a judgement crosses the pipe whole, and Judged gives it, a
// refusal's error, or WORKER_FAILED for an answer without one.
func TestJudged(t *testing.T) {
	j := &Judgement{SQL: "INSERT INTO t VALUES (1) -- x\n", Schema: true, SchemaVersion: 42, Tables: []string{"a", "b"}}
	tests := []struct {
		name string
		resp *Response
		code errcode.Code
	}{
		{"judged", &Response{Version: Version, OK: true, Text: "judged: writes", Judgement: j}, ""},
		{"refused", &Response{Version: Version, Code: errcode.Policy, Message: "random() is not allowed"}, errcode.Policy},
		{"no judgement", &Response{Version: Version, OK: true, Text: "ok"}, errcode.WorkerFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteResponse(&buf, tt.resp); err != nil {
				t.Fatal(err)
			}
			got, err := ReadResponse(&buf)
			if err != nil {
				t.Fatal(err)
			}
			judged, err := got.Judged()
			if tt.code != "" {
				if judged != nil || errcode.Of(err) != tt.code {
					t.Fatalf("got %+v, %v; want %s", judged, err, tt.code)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(judged, j) {
				t.Fatalf("got %+v, %v; want %+v", judged, err, j)
			}
		})
	}
}
