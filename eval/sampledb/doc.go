// Package sampledb writes the deterministic sample shop database (customers,
// products, orders, order_items with 2024-2025 dates) that examples, tests and
// the evaluation run against, so no binary database has to be shipped.
//
// The rows come from a PCG generator with fixed seeds whose raw 64-bit output
// is specified by the Go standard library, and every derived value (ranges,
// prices in cents, dates as day offsets) is computed with integer arithmetic
// in this package. The same rows are therefore produced on every platform and
// Go release; with the same SQLite build the file is also byte-identical.
//
// Imports: nothing of the project.
package sampledb
