package server

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/config"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/policy"
)

// propertyOf declares ps on a bare tool and returns the wire JSON of
// name's property and the schema's required list.
func propertyOf(t *testing.T, ps params, name string) (string, []string) {
	t.Helper()
	tl := mcp.NewTool("t", ps.schema()...)
	b, err := json.Marshal(tl.InputSchema.Properties[name])
	if err != nil {
		t.Fatal(err)
	}
	return string(b), tl.InputSchema.Required
}

func TestParamSchema(t *testing.T) {
	tests := []struct {
		name     string
		p        param
		want     string // the property's wire JSON
		required bool
	}{
		{"required text has minLength", param{name: "q", kind: text, required: true, desc: "d"},
			`{"description":"d","minLength":1,"type":"string"}`, true},
		{"text default", param{name: "q", kind: text, def: "note", desc: "d"},
			`{"default":"note","description":"d","type":"string"}`, false},
		{"text without default", param{name: "q", kind: text, desc: "d"},
			`{"description":"d","type":"string"}`, false},
		{"pattern instead of minLength", param{name: "q", kind: text, required: true, pattern: regexp.MustCompile(`^a+$`), shape: "a's", desc: "d"},
			`{"description":"d","pattern":"^a+$","type":"string"}`, true},
		{"enum", param{name: "q", kind: text, enum: []string{"csv", "json"}, def: "csv", desc: "d"},
			`{"default":"csv","description":"d","enum":["csv","json"],"type":"string"}`, false},
		{"integer bounds and default", param{name: "n", kind: integer, min: 1, max: 9, def: 5, desc: "d"},
			`{"default":5,"description":"d","maximum":9,"minimum":1,"type":"integer"}`, false},
		{"boolean default", param{name: "b", kind: boolean, def: true, desc: "d"},
			`{"default":true,"description":"d","type":"boolean"}`, false},
		{"string or strings", param{name: "l", kind: textList, def: "", desc: "d"},
			`{"anyOf":[{"items":{"type":"string"},"type":"array"},{"type":"string"}],"default":"","description":"d"}`, false},
		{"nullable text", param{name: "q", kind: text, nullable: true, desc: "d"},
			`{"anyOf":[{"type":"string"},{"type":"null"}],"default":null,"description":"d"}`, false},
		{"nullable array of strings", param{name: "l", kind: textList, nullable: true, desc: "d"},
			`{"anyOf":[{"items":{"type":"string"},"type":"array"},{"type":"string"},{"type":"null"}],"default":null,"description":"d"}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, required := propertyOf(t, params{tt.p}, tt.p.name)
			if got != tt.want {
				t.Errorf("schema %s\nwant   %s", got, tt.want)
			}
			if slices.Contains(required, tt.p.name) != tt.required {
				t.Errorf("required = %v, want %s in it: %v", required, tt.p.name, tt.required)
			}
		})
	}
}

// unset marks an argument TestParamParse leaves out.
type unset struct{}

func TestParamParse(t *testing.T) {
	ps := params{
		{name: "query", kind: text, required: true, query: true},
		{name: "limit", kind: integer, min: 1, max: 10, def: 3, hint: "page with offset"},
		{name: "format", kind: text, enum: []string{"csv", "json"}, def: "csv"},
		{name: "name", kind: text, pattern: regexp.MustCompile(`^[a-z]+$`), shape: "lower-case letters", def: "v"},
		{name: "reason", kind: text, missing: "reason is required: say why"},
		{name: "pattern", kind: text, blankOK: true},
		{name: "on", kind: boolean, def: true},
		{name: "cols", kind: textList},
		{name: "kinds", kind: textList, def: ""},
	}
	ps[4].required = true
	ps[5].required, ps[5].missing = true, "pattern is required: pass one"
	base := map[string]any{"query": "SELECT 1", "reason": "why", "pattern": " "}
	tests := []struct {
		name string
		args map[string]any // on top of base; unset{} deletes
		want string         // the parsed values, or the refusal
	}{
		{"defaults", nil, `[SELECT 1 3 csv v why   true [] []]`},
		{"values", map[string]any{"limit": 10.0, "format": "json", "name": "abc", "on": false, "cols": []any{"a"}, "kinds": "x,y"},
			`[SELECT 1 10 json abc why   false [a] [x y]]`},
		{"null is absent", map[string]any{"limit": nil, "on": nil}, `[SELECT 1 3 csv v why   true [] []]`},
		{"unknown", map[string]any{"sql": "x", "Limit": 1.0}, "INVALID_ARGUMENT: unknown argument Limit, sql; t takes query, limit, format, name, reason, pattern, on, cols, kinds"},
		{"required missing", map[string]any{"query": unset{}}, "INVALID_ARGUMENT: query is required: pass it as a string"},
		{"required null", map[string]any{"query": nil}, "INVALID_ARGUMENT: query is required: pass it as a string"},
		{"required blank", map[string]any{"query": " "}, "INVALID_ARGUMENT: query must not be empty"},
		{"wrong type", map[string]any{"query": 1.0}, "INVALID_ARGUMENT: query must be a string, got a number"},
		{"above the bound", map[string]any{"limit": 11.0}, "INVALID_ARGUMENT: limit must be an integer from 1 to 10, got 11; page with offset"},
		{"below the bound", map[string]any{"limit": 0.0}, "INVALID_ARGUMENT: limit must be an integer from 1 to 10, got 0; page with offset"},
		{"not whole", map[string]any{"limit": 1.5}, "INVALID_ARGUMENT: limit must be an integer from 1 to 10, got 1.5; page with offset"},
		{"not in the enum", map[string]any{"format": "xml"}, `INVALID_ARGUMENT: format must be "csv" or "json", got "xml"`},
		{"not the pattern", map[string]any{"name": "a1"}, `INVALID_ARGUMENT: name "a1" must match ^[a-z]+$ (lower-case letters)`},
		{"missing message", map[string]any{"reason": unset{}}, "INVALID_ARGUMENT: reason is required: say why"},
		{"missing message for blank", map[string]any{"reason": " "}, "INVALID_ARGUMENT: reason is required: say why"},
		{"missing message for a wrong type", map[string]any{"reason": true}, "INVALID_ARGUMENT: reason is required: say why"},
		{"blankOK: empty is missing", map[string]any{"pattern": ""}, "INVALID_ARGUMENT: pattern is required: pass one"},
		{"blankOK: absent is missing", map[string]any{"pattern": unset{}}, "INVALID_ARGUMENT: pattern is required: pass one"},
		{"blankOK: wrong type keeps its message", map[string]any{"pattern": 2.0}, "INVALID_ARGUMENT: pattern must be a string, got a number"},
		{"boolean type", map[string]any{"on": "yes"}, "INVALID_ARGUMENT: on must be true or false, got a string"},
		{"a list as a string", map[string]any{"cols": " a, b ,,", "kinds": "x"}, `[SELECT 1 3 csv v why   true [a b] [x]]`},
		{"a list as an array", map[string]any{"cols": []any{"a, b", " c"}, "kinds": []any{"x"}}, `[SELECT 1 3 csv v why   true [a, b  c] [x]]`},
		{"array item type", map[string]any{"cols": []any{"a", 1.0}}, "INVALID_ARGUMENT: cols must be an array of strings; found a number"},
		{"list type", map[string]any{"kinds": 1.0}, "INVALID_ARGUMENT: kinds must be an array of strings or one comma-separated string, got a number"},
		{"first refusal wins, in declared order", map[string]any{"limit": 0.0, "query": unset{}}, "INVALID_ARGUMENT: query is required: pass it as a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := map[string]any{}
			for k, v := range base {
				m[k] = v
			}
			for k, v := range tt.args {
				if v == (unset{}) {
					delete(m, k)
				} else {
					m[k] = v
				}
			}
			v, err := ps.parse(args{tool: "t", m: m}, nil)
			got := fmt.Sprint(err)
			if err == nil {
				got = fmt.Sprint([]any{v.str("query"), v.int("limit"), v.str("format"), v.str("name"), v.str("reason"),
					v.str("pattern"), v.bool("on"), v.strs("cols"), v.strs("kinds")})
			}
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestParamAuditQuery: a query param is the call's audit query as soon as
// it parses, so a later refusal is audited with the statement.
func TestParamAuditQuery(t *testing.T) {
	c := &call{}
	_, err := params{{name: "q", kind: text, query: true}, {name: "n", kind: integer, max: 1, def: 0}}.parse(
		args{tool: "t", m: map[string]any{"q": "SELECT 1", "n": 2.0}}, c)
	if err == nil || !c.query.Valid || c.query.String != "SELECT 1" {
		t.Fatalf("err %v, audit query %+v: want a refusal audited with SELECT 1", err, c.query)
	}
}

// minimalArgs fills ps's required arguments with a value they accept.
func minimalArgs(ps params) map[string]any {
	m := map[string]any{}
	for _, p := range ps {
		if p.required {
			m[p.name] = "x"
		}
	}
	return m
}

// TestDeclaredTools holds every tool of both profiles to its declaration:
// a declared default and bound reach the schema and the parsing, and the
// tool's own handler refuses an unknown argument naming exactly the
// schema's arguments (so the handler parses with the declaration the
// schema was made from).
func TestDeclaredTools(t *testing.T) {
	for _, flags := range [][]string{{"--max-rows", "250", "--default-limit", "20"}, {"--profile", "readonly"}} {
		s := testServer(t, flags...)
		tools := s.memoryTools()
		if s.cfg.Profile == config.ProfileReadonly {
			tools = s.readonlyTools()
		}
		docs := toolDocs(t, s)
		for _, tl := range tools {
			t.Run(s.cfg.Profile+"/"+tl.name, func(t *testing.T) {
				props := docs[tl.name]["inputSchema"].(map[string]any)["properties"].(map[string]any)
				if len(props) != len(tl.params) {
					t.Errorf("schema has %d arguments, declaration %d", len(props), len(tl.params))
				}
				defaults, err := tl.params.parse(args{tool: tl.name, m: minimalArgs(tl.params)}, nil)
				if err != nil {
					t.Fatalf("minimal arguments: %v", err)
				}
				for _, p := range tl.params {
					prop, _ := props[p.name].(map[string]any)
					if msg := undeclaredDefault(prop, p.required); msg != "" {
						t.Errorf("%s: %s", p.name, msg)
					}
					if p.def != nil && fmt.Sprint(prop["default"]) != fmt.Sprint(p.def) {
						t.Errorf("%s: schema default %v, declared %v", p.name, prop["default"], p.def)
					}
					if p.def != nil && p.kind != textList && defaults[p.name] != p.def {
						t.Errorf("%s: parsed default %v, declared %v", p.name, defaults[p.name], p.def)
					}
					if p.kind == integer {
						if prop["minimum"] != float64(p.min) || prop["maximum"] != float64(p.max) {
							t.Errorf("%s: schema bounds %v..%v, declared %d..%d", p.name, prop["minimum"], prop["maximum"], p.min, p.max)
						}
						m := minimalArgs(tl.params)
						m[p.name] = float64(p.max) + 1
						_, err := tl.params.parse(args{tool: tl.name, m: m}, nil)
						if want := fmt.Sprintf("%s must be an integer from %d to %d", p.name, p.min, p.max); !strings.Contains(fmt.Sprint(err), want) {
							t.Errorf("%s=%d: %v, want %q", p.name, p.max+1, err, want)
						}
					}
				}
				names := make([]string, len(tl.params))
				for i, p := range tl.params {
					names[i] = p.name
				}
				takes := strings.Join(names, ", ")
				if takes == "" {
					takes = "no arguments"
				}
				_, err = tl.fn(context.Background(), &call{detail: map[string]any{}}, args{tool: tl.name, m: map[string]any{"bogus": 1.0}})
				if want := "INVALID_ARGUMENT: unknown argument bogus; " + tl.name + " takes " + takes; fmt.Sprint(err) != want {
					t.Errorf("handler: %v\nwant %s", err, want)
				}
			})
		}
	}
}

// undeclaredDefault says what is wrong with an optional property that
// does not tell a host what leaving it out means: it needs a "default",
// and a null default needs a schema that admits null. "" when fine.
func undeclaredDefault(prop map[string]any, required bool) string {
	def, ok := prop["default"]
	switch {
	case required:
		return ""
	case !ok:
		return "optional without a default in its schema: declare def, or nullable"
	case def == nil && !admitsNull(prop):
		return `"default": null but the schema does not admit null`
	}
	return ""
}

func admitsNull(prop map[string]any) bool {
	alts, _ := prop["anyOf"].([]any)
	for _, a := range alts {
		if m, _ := a.(map[string]any); m["type"] == "null" {
			return true
		}
	}
	return false
}

// TestUndeclaredDefault: the rule TestDeclaredTools holds every
// argument to, on its own cases.
func TestUndeclaredDefault(t *testing.T) {
	tests := []struct {
		name     string
		p        param
		required bool
		bad      bool
	}{
		{"required needs none", param{name: "a", kind: text, required: true}, true, false},
		{"optional text without a default", param{name: "a", kind: text}, false, true},
		{"optional list without a default", param{name: "a", kind: textList}, false, true},
		{"text default", param{name: "a", kind: text, def: ""}, false, false},
		{"nullable", param{name: "a", kind: text, nullable: true}, false, false},
		{"nullable list", param{name: "a", kind: textList, nullable: true}, false, false},
		{"integer", param{name: "a", kind: integer, def: 0}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := mcp.NewTool("t", params{tt.p}.schema()...)
			b, err := json.Marshal(tl.InputSchema.Properties["a"])
			if err != nil {
				t.Fatal(err)
			}
			var prop map[string]any
			if err := json.Unmarshal(b, &prop); err != nil {
				t.Fatal(err)
			}
			if msg := undeclaredDefault(prop, tt.required); (msg != "") != tt.bad {
				t.Errorf("%s: %q, want bad=%v", b, msg, tt.bad)
			}
		})
	}
	// A null default that the schema refuses is caught too.
	if undeclaredDefault(map[string]any{"type": "string", "default": nil}, false) == "" {
		t.Error(`{"type":"string","default":null} passed`)
	}
}

// TestViewNamePattern: create_view's declared pattern admits exactly the
// names the policy (and so the worker) accepts.
func TestViewNamePattern(t *testing.T) {
	re := createViewParams[0].pattern
	for _, name := range []string{"v", "_v1", "View_2", "1v", "", "a-b", "a b", "é", "v\n", "v;", "ab\x00"} {
		if got, want := re.MatchString(name), policy.ValidViewName(name); got != want {
			t.Errorf("%q: pattern %v, policy %v", name, got, want)
		}
	}
}
