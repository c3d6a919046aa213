package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"testing"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/config"
)

// toolDocs registers the tools of cfg's profile on a bare MCP server (no
// database, no workers) and returns each tool's wire JSON, decoded.
func toolDocs(t *testing.T, s *Server) map[string]map[string]any {
	t.Helper()
	s.mcp = mcpserver.NewMCPServer("test", "0")
	if s.cfg.Profile == config.ProfileReadonly {
		s.registerReadonly()
	} else {
		s.registerMemory()
	}
	docs := map[string]map[string]any{}
	for name, st := range s.mcp.ListTools() {
		b, err := json.Marshal(st.Tool)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		docs[name] = doc
	}
	return docs
}

func testServer(t *testing.T, args ...string) *Server {
	t.Helper()
	cfg, _, err := config.Parse(append([]string{"--db", "m.db"}, args...), env(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return &Server{cfg: cfg}
}

// TestToolHints pins each tool's hints to the MCP meanings: destructive
// when it may overwrite or remove data, idempotent when a repeat changes
// nothing more, never open-world; every tool has a title in both places.
func TestToolHints(t *testing.T) {
	type want struct{ readOnly, destructive, idempotent bool }
	reads := want{true, false, true}
	tests := []struct {
		profile string
		tools   map[string]want
	}{
		{config.ProfileMemory, map[string]want{
			"read_query": reads, "list_tables": reads, "describe_table": reads, "get_schema": reads,
			"verify_chain": reads, "get_resume_context": reads, "search_text": reads, "recall": reads,
			"write_query":       {false, true, false}, // UPDATE and REPLACE overwrite rows
			"destructive_query": {false, true, false},
			"create_view":       {false, true, true}, // replace=true overwrites a view
			"append_event":      {false, false, false},
			"checkpoint":        {false, false, false},
			"snapshot":          {false, false, false}, // adds a file; every call adds one
		}},
		{config.ProfileReadonly, map[string]want{"list_tables": reads, "describe_table": reads, "query_database": reads}},
	}
	for _, tt := range tests {
		t.Run(tt.profile, func(t *testing.T) {
			docs := toolDocs(t, testServer(t, "--profile", tt.profile))
			if len(docs) != len(tt.tools) {
				t.Fatalf("%d tools, want %d", len(docs), len(tt.tools))
			}
			for name, w := range tt.tools {
				doc, ok := docs[name]
				if !ok {
					t.Errorf("%s: not registered", name)
					continue
				}
				a, _ := doc["annotations"].(map[string]any)
				got := fmt.Sprint(a["readOnlyHint"], a["destructiveHint"], a["idempotentHint"], a["openWorldHint"])
				if exp := fmt.Sprint(w.readOnly, w.destructive, w.idempotent, false); got != exp {
					t.Errorf("%s: readOnly, destructive, idempotent, openWorld = %s, want %s", name, got, exp)
				}
				title, _ := doc["title"].(string)
				if title == "" || a["title"] != title {
					t.Errorf("%s: title %q, annotations.title %q: want one non-empty title in both", name, title, a["title"])
				}
			}
		})
	}
}

var rangeMessage = regexp.MustCompile(`must be an integer from (\d+) to (\d+)`)

// TestToolSchemas checks every input schema: closed (additionalProperties
// false), every integer bounded with a default inside its bounds, the
// bounds taken from the live configuration, and the handler enforcing the
// very bounds the schema announces.
func TestToolSchemas(t *testing.T) {
	tests := []struct {
		name string
		args []string
		// expected [minimum, maximum, default] of some arguments
		bounds map[string][3]float64
	}{
		{"defaults", nil, map[string][3]float64{
			"read_query.limit": {1, 1000, 100}, "read_query.offset": {0, maxOffset, 0},
			"search_text.limit": {1, 1000, 100}, "search_text.context_chars": {0, 1000, 80},
			"get_resume_context.max_events": {1, 1000, 50},
		}},
		{"limits from flags", []string{"--max-rows", "250", "--default-limit", "20"}, map[string][3]float64{
			"read_query.limit": {1, 250, 20}, "search_text.limit": {1, 250, 100},
		}},
		{"max-rows below the search default", []string{"--max-rows", "40", "--default-limit", "40"}, map[string][3]float64{
			"read_query.limit": {1, 40, 40}, "search_text.limit": {1, 40, 40},
		}},
		{"readonly", []string{"--profile", "readonly", "--max-rows", "40", "--default-limit", "40"}, map[string][3]float64{
			"query_database.limit": {1, 500, 100}, "query_database.offset": {0, maxOffset, 0},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testServer(t, tt.args...)
			docs := toolDocs(t, s)
			seen := 0
			for name, doc := range docs {
				schema := doc["inputSchema"].(map[string]any)
				if schema["additionalProperties"] != false {
					t.Errorf("%s: additionalProperties = %v, want false", name, schema["additionalProperties"])
				}
				props, _ := schema["properties"].(map[string]any)
				for arg, p := range props {
					p := p.(map[string]any)
					switch p["type"] {
					case "integer":
						lo, okLo := p["minimum"].(float64)
						hi, okHi := p["maximum"].(float64)
						def, okDef := p["default"].(float64)
						if !okLo || !okHi || !okDef || def < lo || def > hi {
							t.Errorf("%s.%s: minimum %v, maximum %v, default %v", name, arg, p["minimum"], p["maximum"], p["default"])
							continue
						}
						if b, ok := tt.bounds[name+"."+arg]; ok {
							seen++
							if b != [3]float64{lo, hi, def} {
								t.Errorf("%s.%s: [min max default] = %v, want %v", name, arg, [3]float64{lo, hi, def}, b)
							}
						}
						checkHandlerBounds(t, s, name, arg, lo, hi)
					case "boolean":
						if _, ok := p["default"].(bool); !ok {
							t.Errorf("%s.%s: boolean without a default", name, arg)
						}
					}
				}
			}
			if seen != len(tt.bounds) {
				t.Errorf("checked %d of the %d expected bounds", seen, len(tt.bounds))
			}
		})
	}
	format := toolDocs(t, testServer(t))["read_query"]["inputSchema"].(map[string]any)["properties"].(map[string]any)["format"].(map[string]any)
	if fmt.Sprintf("%v %v", format["enum"], format["default"]) != "[csv json] csv" {
		t.Errorf("read_query.format: %v", format)
	}
}

// checkHandlerBounds calls the tool's handler just outside [lo, hi]: it
// must refuse with INVALID_ARGUMENT naming exactly those bounds (the
// refusal comes before any worker or database is needed).
func checkHandlerBounds(t *testing.T, s *Server, tool, arg string, lo, hi float64) {
	t.Helper()
	handlers := map[string]toolFunc{
		"read_query": s.readQuery, "search_text": s.searchText, "get_resume_context": s.resumeContext,
		"query_database": s.roQuery, "recall": s.recall,
	}
	required := map[string]map[string]any{
		"read_query": {"query": "SELECT 1"}, "search_text": {"pattern": "x", "table": "t"},
		"query_database": {"sql": "SELECT 1"}, "get_resume_context": {}, "recall": {"query": "x"},
	}
	fn, ok := handlers[tool]
	if !ok {
		t.Errorf("%s.%s: no handler known to this test; add it", tool, arg)
		return
	}
	for _, v := range []float64{lo - 1, hi + 1} {
		m := map[string]any{arg: v}
		for k, x := range required[tool] {
			m[k] = x
		}
		_, err := fn(context.Background(), &call{detail: map[string]any{}}, args{tool: tool, m: m})
		msg := fmt.Sprint(err)
		got := rangeMessage.FindStringSubmatch(msg)
		if got == nil || got[1] != strconv.FormatFloat(lo, 'f', -1, 64) || got[2] != strconv.FormatFloat(hi, 'f', -1, 64) {
			t.Errorf("%s %s=%v: %q, want INVALID_ARGUMENT naming %v to %v", tool, arg, v, msg, lo, hi)
		}
	}
}
