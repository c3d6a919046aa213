package server

import (
	"fmt"
	"strings"
	"testing"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestArgs(t *testing.T) {
	a := args{tool: "read_query", m: map[string]any{"query": "SELECT 1", "limit": 5.0, "flag": true, "list": []any{"a", "b"}, "nullish": nil}}
	tests := []struct {
		name string
		run  func() error
		err  string
	}{
		{"str ok", func() error { _, err := a.str("query", true, ""); return err }, ""},
		{"str missing", func() error { _, err := a.str("nope", true, ""); return err }, "nope is required"},
		{"str wrong type", func() error { _, err := a.str("limit", true, ""); return err }, "limit must be a string, got a number"},
		{"null is absent", func() error { _, err := a.str("nullish", true, ""); return err }, "nullish is required"},
		{"int ok", func() error { _, err := a.int("limit", 1, 1, 10, ""); return err }, ""},
		{"int range", func() error { _, err := a.int("limit", 1, 1, 4, "page"); return err }, "limit must be an integer from 1 to 4, got 5; page"},
		{"bool type", func() error { _, err := a.bool("query", false); return err }, "query must be true or false, got a string"},
		{"strs ok", func() error { _, err := a.strs("list"); return err }, ""},
		{"strs type", func() error { _, err := a.strs("query"); return err }, "query must be an array of strings"},
		{"unknown", func() error { return a.only("query", "limit") }, "unknown argument flag, list, nullish; read_query takes query, limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.run()
			if tt.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), "INVALID_ARGUMENT: ") || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("got %v, want INVALID_ARGUMENT containing %q", err, tt.err)
			}
		})
	}
}

// TestArgsList: a list argument is an array of strings, or one string split
// at commas (the reference's exclude_kinds="prompt,compaction").
func TestArgsList(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want []string
		err  string
	}{
		{"absent", nil, nil, ""},
		{"array", []any{"prompt", "a,b"}, []string{"prompt", "a,b"}, ""},
		{"empty array", []any{}, []string{}, ""},
		{"comma-separated, stripped, empty items dropped", " prompt, compaction,,session-end ", []string{"prompt", "compaction", "session-end"}, ""},
		{"one item", "note", []string{"note"}, ""},
		{"empty string", "", []string{}, ""},
		{"only commas and spaces", " , ,", []string{}, ""},
		{"number", 3.0, nil, "exclude_kinds must be an array of strings or one comma-separated string, got a number"},
		{"array of numbers", []any{"a", 1.0}, nil, "exclude_kinds must be an array of strings; found a number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := map[string]any{}
			if tt.v != nil {
				m["exclude_kinds"] = tt.v
			}
			got, err := args{tool: "get_resume_context", m: m}.list("exclude_kinds")
			if tt.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), "INVALID_ARGUMENT: "+tt.err) {
					t.Fatalf("got %v, want INVALID_ARGUMENT: %s", err, tt.err)
				}
				return
			}
			if err != nil || fmt.Sprintf("%q", got) != fmt.Sprintf("%q", tt.want) {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
