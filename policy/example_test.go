package policy_test

import (
	"fmt"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/policy"
)

// An Authorizer answers SQLite's authorizer callbacks for one mode and
// keeps the first refusal, worded for the agent.
func ExampleAuthorizer() {
	a := policy.New(policy.Write, policy.Options{})
	a.Authorize(policy.ActionDelete, "orders", "", "main", "")
	fmt.Println(a.Violation())

	a.Reset()
	a.Authorize(policy.ActionInsert, "memory_events", "", "main", "")
	fmt.Println(a.Violation())
	// Output:
	// READ_ONLY_VIOLATION: DELETE is not allowed in write_query; use destructive_query (it snapshots the database first)
	// PROTECTED_TABLE: memory_events is managed by the server and is append-only; it cannot be changed through SQL tools
}
