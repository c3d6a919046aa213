package server

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// The bytes a bulk text puts on the wire are those mcp-go writes for the
// text itself, as JSON and as an SSE event (the two ways it answers).
func TestHTTPBulkWire(t *testing.T) {
	text := strings.Repeat(`<a> & "b" é `+"\u2028\t\n\x01", 10000)
	want := func(res *mcp.CallToolResult) []byte {
		b, err := json.Marshal(mcp.NewJSONRPCResultResponse(mcp.NewRequestId(7), res))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	plain := string(want(mcp.NewToolResultText(text)))
	for _, sse := range []bool{false, true} {
		rec := httptest.NewRecorder()
		w, r := withBulk(rec, httptest.NewRequest("POST", "/mcp", nil))
		b := httpBulkFrom(r.Context())
		if b == nil {
			t.Fatal("no bulk in the request's context")
		}
		res := textResult(b, text)
		if tc, _ := mcp.AsTextContent(res.Content[0]); tc.Text == text {
			t.Fatal("a large text did not take the bulk path")
		}
		line := want(res)
		if sse {
			fmt.Fprintf(w, "event: message\ndata: %s\n\n", line)
		} else {
			_, _ = w.Write(append(line, '\n'))
		}
		got := rec.Body.String()
		if sse {
			if got != "event: message\ndata: "+plain+"\n\n" {
				t.Fatalf("SSE: %d bytes differ from mcp-go's %d", len(got), len(plain))
			}
		} else if got != plain+"\n" {
			t.Fatalf("JSON: %d bytes differ from mcp-go's %d", len(got), len(plain))
		}
	}
}
