// Package search holds the pure parts of search_text (SPEC 3 and 5.2): it
// checks the agent's identifiers against the catalogue, chooses the default
// columns, builds the candidate SELECT, compiles the pattern and builds
// snippets and the totals trailer. It needs no SQLite; the worker runs the
// statement it builds, under the read policy, and feeds the values here.
//
//	re, err := search.Compile(pattern, ignoreCase, fixedStrings)
//	plan, err := search.NewPlan(obj, columns, keyColumn, where, candidateCap)
//	// compile plan.SQL under the policy, check search.CheckWhere(where) and
//	// the column count, step at most candidateCap+1 rows, then per value:
//	v = search.MarkNewlines(v)
//	if loc := re.FindStringIndex(v); loc != nil {
//		snippet := search.Snippet(v, loc[0], loc[1], contextChars)
//	}
//
// # Decisions where the spec is silent
//
//   - Names match the catalogue case-insensitively, as SQLite does, and the
//     stored spelling is what the SQL quotes and the output shows.
//   - A table's default key is the rowid, spelled rowid, _rowid_ or oid,
//     whichever no real column shadows. Views and WITHOUT ROWID tables have
//     no rowid, so they need key_column. On a rowid table key_column may
//     name rowid (or _rowid_, oid) explicitly.
//   - The where text must keep to itself: outside strings, quoted names and
//     comments its parentheses balance and never close the one the SQL puts
//     around it, and it may not end inside a string or a block comment.
//     Otherwise "1) UNION SELECT ..." could change what the statement reads.
//   - Every line break of a value (CR LF as one, LF, CR) reads as ⏎
//     (U+23CE), as in the reference since 0.2.0, both where the pattern
//     matches and in the snippet: ".*" runs across lines and "⏎" finds a
//     break, while RE2's \n matches nothing. Line breaks in the pattern
//     itself become ⏎ too. Backslashes are shown as they are.
//   - The snippet counts context in characters (runes) of the marked
//     value, a ⏎ counting as one, never splitting a UTF-8 sequence; an
//     invalid byte counts as one.
//   - INTEGER and REAL values are searched in the form read_query prints
//     them; NULL and BLOB values are skipped.
//   - A pattern that can match the empty string (a*) matches every value,
//     as RE2 says; the snippet then starts at the value's beginning.
//
// Imports: errcode and rawsqlite only. Never ipc, worker or server: it
// lives under worker, its one user, which calls it.
package search
