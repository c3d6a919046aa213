package ipc

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
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
