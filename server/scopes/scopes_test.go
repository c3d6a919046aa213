package scopes

import (
	"slices"
	"strings"
	"testing"
)

func TestFor(t *testing.T) {
	tests := []struct{ tool, want string }{
		{"read_query", Read}, {"list_tables", Read}, {"describe_table", Read}, {"get_schema", Read},
		{"search_text", Read}, {"verify_chain", Read}, {"get_resume_context", Read}, {"recall", Read},
		{"query_database", Read},
		{"write_query", Write}, {"create_view", Write}, {"append_event", Write}, {"checkpoint", Write}, {"snapshot", Write},
		{"destructive_query", Destructive},
		{"a_tool_added_later", Destructive},
	}
	for _, tt := range tests {
		if got := For(tt.tool); got != tt.want {
			t.Errorf("For(%q) = %q, want %q", tt.tool, got, tt.want)
		}
	}
}

func TestNoScopeImpliesAnother(t *testing.T) {
	for _, granted := range All {
		for tool, need := range tools {
			if got := Allows([]string{granted}, tool); got != (need == granted) {
				t.Errorf("Allows([%s], %s) = %v", granted, tool, got)
			}
		}
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr string
	}{
		{in: "memory:read", want: []string{Read}},
		{in: " memory:destructive , memory:read,memory:read ", want: []string{Read, Destructive}},
		{in: "memory:read,memory:write,memory:destructive", want: All},
		{in: "", wantErr: "no scope given"},
		{in: " , ", wantErr: "no scope given"},
		{in: "memory:admin", wantErr: `unknown scope "memory:admin"`},
		{in: "memory:read,openid", wantErr: `unknown scope "openid"`},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Parse(%q) error = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("Parse(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestKnownDropsOtherScopes(t *testing.T) {
	got := Known([]string{"openid", Write, "other:read", Read, Write})
	if !slices.Equal(got, []string{Read, Write}) {
		t.Fatalf("Known = %v", got)
	}
}
