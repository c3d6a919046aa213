package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server/mcpstdio"
)

// bulkTexts are results on both sides of bulkMin with everything encoding/json
// escapes: quotes, backslashes, control characters, HTML characters, U+2028,
// invalid UTF-8, and plain multi-byte text.
func bulkTexts() []string {
	csvRows := func(n int) string {
		var b strings.Builder
		b.WriteString("id,name,note\n")
		for i := range n {
			fmt.Fprintf(&b, "%d,item %d,\"note, with \"\"quotes\"\" %d\"\n", i, i, i)
		}
		return b.String() + fmt.Sprintf("# %d rows", n)
	}
	odd := "tab\there <b>&amp;</b> \u2028\u2029 \x00\x1f\x7f é 😀 bad\xff\xfe end\\ \"q\"\r\n"
	return []string{
		"ok: 1 rows affected",
		csvRows(10),
		strings.Repeat("x", bulkMin-1),
		strings.Repeat("x", bulkMin),
		csvRows(20000),
		strings.Repeat(odd, bulkMin/len(odd)+3),
		strings.Repeat("日本語のテキスト", bulkMin/8),
	}
}

// The bytes a host reads are identical whether mcp-go's stdio server
// encodes a text itself or the stdio loop writes it already encoded, for
// small and bulk texts alike.
func TestBulkTextWireIsIdentical(t *testing.T) {
	texts := bulkTexts()
	plain := stdioTranscript(t, texts, false)
	spliced := stdioTranscript(t, texts, true)
	if len(plain) != len(spliced) {
		t.Fatalf("%d lines plain, %d spliced", len(plain), len(spliced))
	}
	for i := range plain {
		if plain[i] != spliced[i] {
			n := min(len(plain[i]), len(spliced[i]))
			at := 0
			for at < n && plain[i][at] == spliced[i][at] {
				at++
			}
			t.Fatalf("line %d differs at byte %d:\nplain   %.200q\nspliced %.200q", i, at, plain[i][at:], spliced[i][at:])
		}
	}
	// The transcript really carries the texts.
	for i, text := range texts {
		var resp struct {
			Result mcp.CallToolResult `json:"result"`
		}
		if err := json.Unmarshal([]byte(spliced[i+1]), &resp); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		got := resp.Result.Content[0].(mcp.TextContent).Text
		if want := strings.ToValidUTF8(text, "\ufffd"); got != want && !strings.Contains(text, "\xff") {
			t.Fatalf("text %d came back as %d bytes, want %d", i, len(got), len(want))
		}
	}
}

// stdioTranscript serves texts, one tools/call at a time, through mcp-go's
// own stdio server (splice false) or through the stdio loop with
// textResult (splice true), and returns the lines written: the initialize
// answer, then one line per text.
func stdioTranscript(t *testing.T, texts []string, splice bool) []string {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := mcpserver.NewMCPServer("bulk-test", "1", mcpserver.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("text", mcp.WithNumber("n")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		text := texts[req.GetInt("n", 0)]
		if !splice {
			return mcp.NewToolResultText(text), nil
		}
		return textResult(mcpstdio.CallFrom(ctx), text), nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		if splice {
			done <- mcpstdio.Serve(ctx, s, inR, outW, mcpstdio.Options{})
		} else {
			done <- mcpserver.NewStdioServer(s).Listen(ctx, inR, outW)
		}
	}()
	out := bufio.NewReaderSize(outR, 1<<20)
	var lines []string
	call := func(line string) {
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
		got, err := out.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, got)
	}
	call(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	for i := range texts {
		call(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"text","arguments":{"n":%d}}}`, i+2, i))
	}
	cancel()
	inW.Close()
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	<-done
	return lines
}

func TestAppendJSONTextMatchesEncodingJSON(t *testing.T) {
	inputs := append(bulkTexts(), "", "<", "a&b", "\u2028", "\xe2\x80", "\xe2\x80\xa8x", "\x80abcdefghijkl", "12345678\"")
	for pos := range 17 {
		for _, c := range []string{"\"", "\\", "<", ">", "&", "\x00", "\x1f", "\x7f", "é", "\xff", "\u2029"} {
			inputs = append(inputs, strings.Repeat("a", pos)+c+strings.Repeat("b", 17-pos))
		}
	}
	for _, s := range inputs {
		want, _ := json.Marshal(s)
		if got := appendJSONText(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("%.80q:\n got %.200q\nwant %.200q", s, got, want)
		}
	}
}

func FuzzAppendJSONText(f *testing.F) {
	f.Add("plain text, more than eight bytes")
	f.Add("<>&\u2028\u2029\x00\x7f\xff é \"\\")
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendJSONText(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("%q: got %q, want %q", s, got, want)
		}
	})
}

// BenchmarkToolResultEncoding is the front's cost of putting a 100,000-row
// CSV export (5.3 MB) on the wire: mcp-go's own encoding of the JSON-RPC
// response (json.Marshal, then a line as its stdio server writes it)
// against the bulk text the stdio loop writes already encoded, both
// through the stdio loop to io.Discard.
func BenchmarkToolResultEncoding(b *testing.B) {
	text := bulkTexts()[4]
	for len(text) < 5<<20 {
		text += text[:len(text)/2]
	}
	for _, tt := range []struct {
		name string
		bulk bool
	}{{"mcp-go", false}, {"bulk-splice", true}} {
		b.Run(tt.name, func(b *testing.B) {
			s := mcpserver.NewMCPServer("bench", "1", mcpserver.WithToolCapabilities(false))
			s.AddTool(mcp.NewTool("text"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				if tt.bulk {
					return textResult(mcpstdio.CallFrom(ctx), text), nil
				}
				return mcp.NewToolResultText(text), nil
			})
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- mcpstdio.Serve(ctx, s, inR, outW, mcpstdio.Options{}) }()
			out := bufio.NewReaderSize(outR, 8<<20)
			call := func(line string) {
				if _, err := io.WriteString(inW, line+"\n"); err != nil {
					b.Fatal(err)
				}
				if _, err := out.ReadSlice('\n'); err != nil && err != bufio.ErrBufferFull {
					b.Fatal(err)
				}
			}
			call(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				call(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"text"}}`)
			}
			cancel()
			inW.Close()
			go func() { _, _ = io.Copy(io.Discard, outR) }()
			<-done
		})
	}
}
