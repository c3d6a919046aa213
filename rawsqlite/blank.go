package rawsqlite

import "strings"

// IsBlank reports whether sql holds nothing but white space and comments,
// as SQLite's tokenizer defines them: space, \t, \n, \f, \r; "--" up to
// the end of the line; "/*" up to "*/" or the end of the text. A
// semicolon is not blank. Use it on the tail from [Conn.Prepare] to refuse
// a second statement without compiling it.
func IsBlank(sql string) bool {
	for i := 0; i < len(sql); {
		switch c := sql[i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r':
			i++
		case strings.HasPrefix(sql[i:], "--"):
			j := strings.IndexByte(sql[i:], '\n')
			if j < 0 {
				return true
			}
			i += j + 1
		case strings.HasPrefix(sql[i:], "/*"):
			j := strings.Index(sql[i+2:], "*/")
			if j < 0 {
				return true
			}
			i += 2 + j + 2
		default:
			return false
		}
	}
	return true
}
