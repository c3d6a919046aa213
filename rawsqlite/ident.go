package rawsqlite

import "strings"

// QuoteIdent is name as an SQL identifier: in double quotes, each double
// quote in it doubled. Every package that builds SQL around a name it did
// not write (the worker, search, undo, restore, the memory layer, the
// person's view) quotes it here.
func QuoteIdent(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }
