package rawsqlite

import "strings"

// QuoteIdent is name as an SQL identifier: in double quotes, each double
// quote in it doubled. Every package that builds SQL around a name it did
// not write (the worker, search, undo, restore, the memory layer, the
// person's view) quotes it here.
func QuoteIdent(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// SameName compares two SQL identifiers the way SQLite does: ASCII letters
// without regard to case, every other byte exactly. Go's strings.EqualFold
// folds Unicode too ("ſ" matches "s", the Kelvin sign matches "k"), so it
// would call names equal that SQLite keeps apart.
func SameName(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if lowerASCII(a[i]) != lowerASCII(b[i]) {
			return false
		}
	}
	return true
}

// FoldName lower-cases the ASCII letters of name, SQLite's notion of case
// for identifiers; other bytes stay as they are.
func FoldName(name string) string {
	for i := 0; i < len(name); i++ {
		if c := name[i]; c >= 'A' && c <= 'Z' {
			b := []byte(name)
			for j := i; j < len(b); j++ {
				b[j] = lowerASCII(b[j])
			}
			return string(b)
		}
	}
	return name
}

func lowerASCII(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
