package tests

import (
	"encoding/json"
	"testing"
)

// TestEveryOptionalArgumentHasADefault walks tools/list of both profiles
// over the real binary: every argument a tool does not require declares
// what leaving it out means, a "default" in its schema, and a null
// default comes with a schema that admits null (SPEC 3's columns=null).
func TestEveryOptionalArgumentHasADefault(t *testing.T) {
	t.Parallel()
	for _, profile := range []string{"memory", "readonly"} {
		t.Run(profile, func(t *testing.T) {
			db := newDB(t)
			if profile == "readonly" {
				db = shopDB(t)
			}
			s := start(t, db, "--profile", profile)
			res, err := s.c.ListTools(t.Context(), mcpListTools())
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(res.Tools)
			if err != nil {
				t.Fatal(err)
			}
			var tools []struct {
				Name        string `json:"name"`
				InputSchema struct {
					Properties map[string]map[string]any `json:"properties"`
					Required   []string                  `json:"required"`
				} `json:"inputSchema"`
			}
			if err := json.Unmarshal(b, &tools); err != nil {
				t.Fatal(err)
			}
			optional := 0
			for _, tl := range tools {
				required := map[string]bool{}
				for _, r := range tl.InputSchema.Required {
					required[r] = true
				}
				for name, prop := range tl.InputSchema.Properties {
					if required[name] {
						continue
					}
					optional++
					def, ok := prop["default"]
					if !ok {
						t.Errorf("%s(%s): optional, with no default in its input schema: %v", tl.Name, name, prop)
					} else if def == nil && !admitsNull(prop) {
						t.Errorf("%s(%s): \"default\": null, but the schema does not admit null: %v", tl.Name, name, prop)
					}
				}
			}
			if optional == 0 {
				t.Fatalf("no optional argument in the %s profile's %d tools: the walk saw nothing", profile, len(tools))
			}
		})
	}
}

// admitsNull: a property whose type, or one of whose anyOf alternatives,
// is null.
func admitsNull(prop map[string]any) bool {
	alts, _ := prop["anyOf"].([]any)
	alts = append(alts, map[string]any{"type": prop["type"]})
	for _, a := range alts {
		m, _ := a.(map[string]any)
		switch ty := m["type"].(type) {
		case string:
			if ty == "null" {
				return true
			}
		case []any:
			for _, x := range ty {
				if x == "null" {
					return true
				}
			}
		}
	}
	return false
}
