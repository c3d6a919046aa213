// Package eval measures how well an agent answers analytics questions through
// the read-only profile's tools (list_tables, describe_table, query_database)
// and checks that a destructive request is refused with the file unchanged.
//
// # Tasks
//
// tasks.json (embedded; see LoadTasks) holds each question, the fixed shape
// of its answer, and a reference SQL statement. The reference SQL is run on
// the database directly by Reference and is never shown to a model. Check
// compares an answer with the reference by the task's ordering rule and
// numeric tolerance.
//
// # Solvers
//
// SolveScripted replays the SQL a competent agent would send (the task's
// script) through a ToolCaller; it tests the server, not a model. Package
// eval/agent drives a real model through the Anthropic Messages API; the
// model answers by calling a submit_answer tool whose input schema is the
// task's answer shape (AnswerSchema.InputSchema, ParseSubmission). RunAll
// runs any SolveFunc over the tasks and WriteReport prints the results.
//
// Imports: nothing of the project; never server, memory or worker, and no
// HTTP client: the server binary links this package (eval --scripted) and
// no model client (tests/TestServerLinksNoLLMClient).
package eval
