package tests

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestResumeContextExcludeKindsForms: exclude_kinds is an array of kinds or
// one comma-separated string, the reference's form that the second-brain
// plugin sends (items stripped, empty ones ignored, "" excludes nothing).
func TestResumeContextExcludeKindsForms(t *testing.T) {
	t.Parallel()
	s := start(t, newDB(t))
	for _, e := range [][2]string{{"prompt", "p1"}, {"insight", "i1"}, {"compaction", "c1"}, {"a,b", "odd kind"}, {"note", "n1"}} {
		s.ok("append_event", map[string]any{"kind": e[0], "content": e[1]})
	}
	ids := func(text string) string {
		_, csv, _ := strings.Cut(text, "id,ts,kind,content\n")
		var out []string
		for _, line := range strings.Split(csv, "\n") {
			if id, _, ok := strings.Cut(line, ","); ok && !strings.HasPrefix(line, "#") {
				out = append(out, id)
			}
		}
		return strings.Join(out, " ")
	}
	tests := []struct {
		name    string
		exclude any
		want    string
		header  string
	}{
		{"plugin string", "prompt,compaction,session-end,response", "2 4 5", "# 3 events |"},
		{"items stripped, empty ignored", " prompt , ,compaction,", "2 4 5", "# 3 events |"},
		{"empty string excludes nothing", "", "1 2 3 4 5", "# 5 events |"},
		{"array", []any{"prompt", " note "}, "2 3 4", "# 3 events |"},
		{"array items are whole kinds", []any{"a,b"}, "1 2 3 5", "# 4 events |"},
		{"string splits at commas", "a,b", "1 2 3 4 5", "# 5 events |"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, isErr := s.call("get_resume_context", map[string]any{"max_events": 40, "exclude_kinds": tt.exclude})
			if isErr || ids(text) != tt.want || !strings.Contains(text, "\n"+tt.header) {
				t.Fatalf("got (error=%v) ids %q in\n%s\nwant ids %q and %q", isErr, ids(text), text, tt.want, tt.header)
			}
		})
	}
	s.fails("get_resume_context", map[string]any{"exclude_kinds": map[string]any{"kind": "prompt"}}, "INVALID_ARGUMENT")
}

// TestExcludeKindsSchemaAdmitsBothForms reads tools/list as raw JSON, as a
// host that validates arguments against the input schema does, and checks
// that the plugin's call validates in both forms and a wrong type does not.
func TestExcludeKindsSchemaAdmitsBothForms(t *testing.T) {
	t.Parallel()
	c := startRaw(t, newDB(t))
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	var msg struct {
		Result struct {
			Tools []struct {
				Name        string          `json:"name"`
				InputSchema json.RawMessage `json:"inputSchema"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(c.read()), &msg); err != nil {
		t.Fatal(err)
	}
	var raw json.RawMessage
	for _, tool := range msg.Result.Tools {
		if tool.Name == "get_resume_context" {
			raw = tool.InputSchema
		}
	}
	if raw == nil {
		t.Fatalf("no get_resume_context in tools/list (%d tools)", len(msg.Result.Tools))
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	comp := jsonschema.NewCompiler()
	if err := comp.AddResource("get_resume_context.json", doc); err != nil {
		t.Fatal(err)
	}
	schema, err := comp.Compile("get_resume_context.json")
	if err != nil {
		t.Fatalf("the input schema does not compile: %v\n%s", err, raw)
	}
	for _, tt := range []struct {
		args string
		ok   bool
	}{
		{`{"max_events": 40, "exclude_kinds": "prompt,compaction,session-end,response"}`, true},
		{`{"exclude_kinds": ""}`, true},
		{`{"exclude_kinds": ["prompt", "compaction"]}`, true},
		{`{}`, true},
		{`{"exclude_kinds": 3}`, false},
		{`{"exclude_kinds": [1]}`, false},
		{`{"max_events": 0}`, false},
	} {
		v, _ := jsonschema.UnmarshalJSON(strings.NewReader(tt.args))
		if err := schema.Validate(v); (err == nil) != tt.ok {
			t.Errorf("%s: valid=%v, want %v (%v)\nschema: %s", tt.args, err == nil, tt.ok, err, raw)
		}
	}
}
