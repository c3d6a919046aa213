// Package render turns query results into the texts an agent reads: CSV with
// a "# N rows" trailer (the default) or the JSON shape of the read-only
// profile, applying the row, byte and cell caps as it goes.
//
// Values arrive as [Value], a tagged union of SQLite's storage classes, so
// this package needs no SQLite. A writer is fed one row at a time and stops
// the caller (Add returns false) as soon as a cap ends the output:
//
//	w := render.NewCSV(caps, columns)
//	for rows.Next() {
//		// fill vals
//		if !w.Add(vals) {
//			break
//		}
//	}
//	text := w.Finish(false)
//
// The caller may fetch Limit+1 rows and offer all of them: the one past the
// limit is refused and makes the trailer say more rows exist.
//
// # Decisions where the spec is silent
//
//   - The texts follow the reference server (mcp-sqlite-memory 0.3,
//     csvfmt.py): "# N rows" for every N, "# 1 rows" included; the byte cap
//     counts the header and row lines with their "\n", never the trailer;
//     the first row is kept however long it is, and the cap reports
//     truncation only when it refuses a row.
//   - The cell cap cuts text cells only. Numbers are at most 24 characters
//     and a cut number or blob marker would misread as a value.
//   - Reals print like Python's repr (the reference server): -0.0 keeps its
//     sign, since it round-trips; infinities print as "Inf"/"-Inf" like the
//     sqlite3 shell (strings in JSON, which has no such number).
//   - A result without columns renders as the trailer alone ("# 0 rows") in
//     CSV and as empty arrays in JSON.
//   - JSON applies the same caps; having no trailer, it signals a byte cap
//     stop with hasMore=true, so offset+returnedRows resumes correctly.
//   - A cap <= 0 means no limit.
//
// Imports: nothing of the project (values arrive as Value). It holds the
// one JSON string escape (jsonstring.go) that memory's canonical form, the
// audit details and the JSON results share.
package render
