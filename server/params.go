package server

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// kind is a tool argument's JSON type.
type kind int

const (
	text     kind = iota // a string
	integer              // a whole number within [min, max]
	boolean              // true or false
	strList              // an array of strings
	textList             // an array of strings, or one comma-separated string
)

// param declares one tool argument. The tool's input schema (tools/list)
// and the handler's checks both come from it, so a name, default, bound
// or required flag is written once.
type param struct {
	name     string
	kind     kind
	required bool
	// def is the default for an absent or null argument (a string, int or
	// bool after kind). A list's default only shows in the schema: an
	// absent list is nil. An optional argument has a def or is nullable,
	// so that tools/list tells a host what leaving it out means.
	def any
	// nullable declares null as the argument's default (SPEC 3's
	// "columns=null"): absent, the server chooses, as desc says; parsing
	// gives the zero value.
	nullable bool
	min, max int // an integer's bounds
	enum     []string
	pattern  *regexp.Regexp
	// shape says in words what pattern admits, for its refusal.
	shape string
	desc  string
	// hint follows an out-of-range integer's refusal (how to get more).
	hint string
	// missing replaces every refusal of a required string (absent, blank
	// or not a string) with one message that says what to pass.
	missing string
	// blankOK makes white space a value: only "" (or absence) is refused,
	// with missing, and a value of the wrong type keeps its own message.
	blankOK bool
	// query records the value as the call's audit query as soon as it
	// parses, so that a later argument's refusal is audited with it.
	query bool
}

// params are a tool's arguments in the order tools/list shows them and
// the handler checks them.
type params []param

// schema is the tool options declaring every argument.
func (ps params) schema() []mcp.ToolOption {
	opts := make([]mcp.ToolOption, len(ps))
	for i, p := range ps {
		opts[i] = p.schema()
	}
	return opts
}

func (p param) schema() mcp.ToolOption {
	var o []mcp.PropertyOption
	if p.required {
		o = append(o, mcp.Required())
	}
	switch p.kind {
	case text:
		if p.pattern != nil {
			o = append(o, mcp.Pattern(p.pattern.String()))
		} else if p.required {
			o = append(o, mcp.MinLength(1))
		}
		if len(p.enum) > 0 {
			o = append(o, mcp.Enum(p.enum...))
		}
		if p.def != nil {
			o = append(o, mcp.DefaultString(p.def.(string)))
		}
	case integer:
		o = append(o, mcp.Min(p.min), mcp.Max(p.max), mcp.DefaultNumber(p.def.(int)))
	case boolean:
		o = append(o, mcp.DefaultBool(p.def.(bool)))
	case strList:
		o = append(o, mcp.WithStringItems())
	case textList:
		o = append(o, stringOrStrings())
		if p.def != nil {
			o = append(o, mcp.DefaultString(p.def.(string)))
		}
	}
	o = append(o, mcp.Description(p.desc))
	if p.nullable {
		o = append(o, orNull())
	}
	switch p.kind {
	case integer:
		return mcp.WithInteger(p.name, o...)
	case boolean:
		return mcp.WithBoolean(p.name, o...)
	case strList:
		return mcp.WithArray(p.name, o...)
	case textList:
		return mcp.WithAny(p.name, o...)
	}
	return mcp.WithString(p.name, o...)
}

// stringOrStrings lets a property be an array of strings or one string,
// so that hosts validating arguments against the schema accept both forms
// of a list (get_resume_context's exclude_kinds).
func stringOrStrings() mcp.PropertyOption {
	return func(schema map[string]any) {
		schema["anyOf"] = []any{
			map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
			map[string]any{"type": "string"},
		}
	}
}

// orNull makes a property admit null and default to it, in the form
// Python MCP servers give an optional argument (anyOf the value's schema
// and null, "default": null), which hosts know.
func orNull() mcp.PropertyOption {
	return func(schema map[string]any) {
		value := map[string]any{}
		for _, k := range []string{"type", "items", "pattern", "enum", "minLength"} {
			if v, ok := schema[k]; ok {
				value[k] = v
				delete(schema, k)
			}
		}
		schema["anyOf"] = []any{value, map[string]any{"type": "null"}}
		schema["default"] = nil
	}
}

// values are a call's parsed arguments: every declared name has a value of
// its kind's Go type (string, int, bool, []string).
type values map[string]any

func (v values) str(name string) string    { return v[name].(string) }
func (v values) int(name string) int       { return v[name].(int) }
func (v values) bool(name string) bool     { return v[name].(bool) }
func (v values) strs(name string) []string { return v[name].([]string) }

// parse checks a call's arguments against the declaration, in its order,
// and stops at the first refusal: an unknown name, then each argument.
// c (nil in tests) gets the audit query of a query param.
func (ps params) parse(a args, c *call) (values, error) {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.name
	}
	if err := a.only(names...); err != nil {
		return nil, err
	}
	v := make(values, len(ps))
	for _, p := range ps {
		x, err := p.parse(a)
		if err != nil {
			return nil, err
		}
		v[p.name] = x
		if p.query && c != nil {
			c.setQuery(x.(string))
		}
	}
	return v, nil
}

func (p param) parse(a args) (any, error) {
	switch p.kind {
	case integer:
		return a.int(p.name, p.def.(int), p.min, p.max, p.hint)
	case boolean:
		return a.bool(p.name, p.def.(bool))
	case strList:
		return a.strs(p.name)
	case textList:
		return a.list(p.name)
	}
	return p.parseText(a)
}

func (p param) parseText(a args) (string, error) {
	def, _ := p.def.(string)
	if p.blankOK {
		s, err := a.str(p.name, false, def)
		if err == nil && p.required && s == "" {
			err = invalid("%s", p.missing)
		}
		return s, err
	}
	s, err := a.str(p.name, p.required, def)
	switch {
	case err != nil && p.missing != "":
		return "", invalid("%s", p.missing)
	case err != nil:
		return "", err
	case p.pattern != nil && !p.pattern.MatchString(s):
		return "", invalid("%s %q must match %s (%s)", p.name, s, p.pattern, p.shape)
	case len(p.enum) > 0 && !slices.Contains(p.enum, s):
		return "", invalid("%s must be %s, got %q", p.name, oneOf(p.enum), s)
	}
	return s, nil
}

// oneOf lists choices for a refusal: "a", "b" or "c".
func oneOf(choices []string) string {
	q := make([]string, len(choices))
	for i, c := range choices {
		q[i] = fmt.Sprintf("%q", c)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}
