package server

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

func TestOutWriterDropsOnlyMarkedResponses(t *testing.T) {
	response := func(res *mcp.CallToolResult) []byte {
		b, err := json.Marshal(mcp.NewJSONRPCResultResponse(mcp.NewRequestId(7), res))
		if err != nil {
			t.Fatal(err)
		}
		return append(b, '\n')
	}
	tests := []struct {
		name string
		line []byte
		drop bool
	}{
		{"cancelled call", response(noResponse(reasonCancelled)), true},
		{"shutdown", response(noResponse(reasonShutdown)), true},
		{"answer", response(mcp.NewToolResultText("ok: 1 rows affected")), false},
		{"agent text naming the mark", response(mcp.NewToolResultText(`{"_meta":{"` + noResponseKey + `":true}}`)), false},
		{"mark set false", response(&mcp.CallToolResult{Result: mcp.Result{Meta: &mcp.Meta{AdditionalFields: map[string]any{noResponseKey: false}}}}), false},
		{"notification", []byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"` + noResponseKey + `"}}` + "\n"), false},
		{"long line", response(mcp.NewToolResultText(strings.Repeat("x", maxMarkedResponse) + noResponseKey)), false},
		{"not json", []byte(noResponseKey + "\n"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			w := &outWriter{w: &out}
			n, err := w.Write(tt.line)
			if err != nil || n != len(tt.line) {
				t.Fatalf("Write: %d, %v", n, err)
			}
			if dropped := out.Len() == 0; dropped != tt.drop {
				t.Fatalf("dropped %v, want %v: %s", dropped, tt.drop, tt.line)
			}
		})
	}
}

func TestPartialName(t *testing.T) {
	a, b := partialName("memory"), partialName("memory")
	if a == b || !strings.HasPrefix(a, "memory.") || !strings.HasSuffix(a, ".partial") {
		t.Fatalf("names %q %q", a, b)
	}
}
