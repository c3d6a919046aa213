package server

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
)

// args reads one call's arguments strictly: wrong types, empty required
// strings, out-of-range numbers and unknown names are INVALID_ARGUMENT, never
// guessed around (mcp-go's own schema messages carry no code).
type args struct {
	tool string
	m    map[string]any
}

func invalid(format string, a ...any) error {
	return errcode.New(errcode.InvalidArgument, fmt.Sprintf(format, a...))
}

// only refuses argument names the tool does not take, which are usually
// typos ("sql" for "query") that would otherwise be silently ignored.
func (a args) only(names ...string) error {
	var unknown []string
	for k := range a.m {
		found := false
		for _, n := range names {
			if k == n {
				found = true
				break
			}
		}
		if !found {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	takes := "no arguments"
	if len(names) > 0 {
		takes = strings.Join(names, ", ")
	}
	return invalid("unknown argument %s; %s takes %s", strings.Join(unknown, ", "), a.tool, takes)
}

func (a args) present(name string) bool {
	v, ok := a.m[name]
	return ok && v != nil
}

// str returns a string argument; a required one must be non-blank.
func (a args) str(name string, required bool, def string) (string, error) {
	if !a.present(name) {
		if required {
			return "", invalid("%s is required: pass it as a string", name)
		}
		return def, nil
	}
	s, ok := a.m[name].(string)
	if !ok {
		return "", invalid("%s must be a string, got %s", name, JSONKind(a.m[name]))
	}
	if required && strings.TrimSpace(s) == "" {
		return "", invalid("%s must not be empty", name)
	}
	return s, nil
}

// int returns an integer argument within [min, max].
func (a args) int(name string, def, min, max int, hint string) (int, error) {
	if !a.present(name) {
		return def, nil
	}
	f, ok := a.m[name].(float64)
	if !ok {
		return 0, invalid("%s must be an integer, got %s", name, JSONKind(a.m[name]))
	}
	if f != math.Trunc(f) || f < float64(min) || f > float64(max) {
		msg := fmt.Sprintf("%s must be an integer from %d to %d, got %v", name, min, max, f)
		if hint != "" {
			msg += "; " + hint
		}
		return 0, invalid("%s", msg)
	}
	return int(f), nil
}

func (a args) bool(name string, def bool) (bool, error) {
	if !a.present(name) {
		return def, nil
	}
	b, ok := a.m[name].(bool)
	if !ok {
		return false, invalid("%s must be true or false, got %s", name, JSONKind(a.m[name]))
	}
	return b, nil
}

// strs returns an array-of-strings argument (nil when absent or null).
func (a args) strs(name string) ([]string, error) {
	if !a.present(name) {
		return nil, nil
	}
	list, ok := a.m[name].([]any)
	if !ok {
		return nil, invalid("%s must be an array of strings, got %s", name, JSONKind(a.m[name]))
	}
	out := make([]string, 0, len(list))
	for _, v := range list {
		s, ok := v.(string)
		if !ok {
			return nil, invalid("%s must be an array of strings; found %s", name, JSONKind(v))
		}
		out = append(out, s)
	}
	return out, nil
}

// list returns a list of names, the one form every such argument takes
// (exclude_kinds, search_text's columns): an array of strings, or one
// string of comma-separated items (the reference server's form, e.g.
// "prompt,compaction"); nil when absent or null. Items of the string form
// are split at commas, stripped of spaces, and empty ones dropped, so ""
// is an empty list. Array items are taken whole (a column name may hold a
// comma or a space).
func (a args) list(name string) ([]string, error) {
	if s, ok := a.m[name].(string); ok {
		var items []string
		for _, item := range strings.Split(s, ",") {
			if item = strings.TrimSpace(item); item != "" {
				items = append(items, item)
			}
		}
		return items, nil
	}
	if v := a.m[name]; v != nil {
		if _, ok := v.([]any); !ok {
			return nil, invalid("%s must be an array of strings or one comma-separated string, got %s", name, JSONKind(v))
		}
	}
	return a.strs(name)
}

// JSONKind names the type of a decoded JSON value, with its article ("a
// string", "an array", "null"), for messages about an argument of the
// wrong type.
func JSONKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
