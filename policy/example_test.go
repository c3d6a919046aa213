package policy_test

import (
	"fmt"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/policy"
)

// An Authorizer answers SQLite's authorizer callbacks for one mode and
// keeps the first refusal, worded for the agent.
func ExampleAuthorizer() {
	a := policy.New(policy.Write, policy.Options{})
	a.Authorize(policy.Call{Action: policy.ActionDelete, Arg1: "orders", DB: "main", Arg2Null: true})
	fmt.Println(a.Violation())

	a.Reset()
	a.Authorize(policy.Call{Action: policy.ActionInsert, Arg1: "memory_events", DB: "main", Arg2Null: true})
	fmt.Println(a.Violation())
	// Output:
	// READ_ONLY_VIOLATION: DELETE is not allowed in write_query; use destructive_query (it snapshots the database first)
	// PROTECTED_TABLE: memory_events is managed by the server and is append-only; it cannot be changed through SQL tools
}
