// Package scopes is what a token may do (SPEC 11.2): three scopes, for
// OAuth access tokens and static tokens alike, none implying another, and
// the scope each tool needs.
//
// Imports: nothing of the project.
package scopes

import (
	"fmt"
	"slices"
	"strings"
)

// The three scopes.
const (
	Read        = "memory:read"
	Write       = "memory:write"
	Destructive = "memory:destructive"
)

// All is every scope, in the order they are listed: what a static token
// made without --scopes has, as every token had before scopes.
var All = []string{Read, Write, Destructive}

// tools maps each tool to the scope it needs. A tool not listed needs
// Destructive (see For): a new tool is never granted by accident.
var tools = map[string]string{
	// The memory profile's reads, the recall tool, and the readonly
	// profile's.
	"read_query": Read, "list_tables": Read, "describe_table": Read, "get_schema": Read,
	"search_text": Read, "verify_chain": Read, "get_resume_context": Read, "recall": Read,
	"query_database": Read,
	// Writes that add or overwrite rows, never removing them without a
	// snapshot.
	"write_query": Write, "create_view": Write, "append_event": Write, "checkpoint": Write, "snapshot": Write,
	"destructive_query": Destructive,
}

// For is the scope tool needs.
func For(tool string) string {
	if s, ok := tools[tool]; ok {
		return s
	}
	return Destructive
}

// Has reports whether granted holds scope.
func Has(granted []string, scope string) bool { return slices.Contains(granted, scope) }

// Allows reports whether granted lets an agent call tool.
func Allows(granted []string, tool string) bool { return Has(granted, For(tool)) }

// Parse reads a comma-separated list of scopes ("memory:read,memory:write"),
// refusing unknown ones and empty lists; the result is in All's order,
// without repeats.
func Parse(list string) ([]string, error) {
	var seen []string
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if !slices.Contains(All, item) {
			return nil, fmt.Errorf("unknown scope %q: the scopes are %s", item, strings.Join(All, ", "))
		}
		seen = append(seen, item)
	}
	if len(seen) == 0 {
		return nil, fmt.Errorf("no scope given: name one or more of %s, comma-separated", strings.Join(All, ", "))
	}
	return Known(seen), nil
}

// Known keeps the scopes of granted that are this server's (an OAuth
// token carries others too: openid, profile, another server's), in All's
// order, without repeats.
func Known(granted []string) []string {
	var out []string
	for _, s := range All {
		if slices.Contains(granted, s) {
			out = append(out, s)
		}
	}
	return out
}
