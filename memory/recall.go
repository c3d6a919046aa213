package memory

import (
	"errors"
	"strings"
	"unicode"
)

// ErrEmptyQuery: get_resume_context's query has no word to search for.
var ErrEmptyQuery = errors.New("query has no words to search for")

// RecallQuery turns get_resume_context's query into an FTS5 expression
// that cannot fail to parse: every word becomes a quoted FTS5 string and
// the words are joined with OR, so that bm25 ranks the events that hold
// more of them, and rarer ones, first (an agent recalling "login cookie
// bug" wants the event about the cookie even if it never says "bug").
// A "double-quoted phrase" stays a phrase, a trailing * keeps a prefix
// search (cach*), and the operators AND, OR, NOT and NEAR are dropped:
// whoever needs FTS5's full syntax writes the MATCH with read_query.
func RecallQuery(q string) (string, error) {
	var terms []string
	add := func(text string, prefix bool) {
		text = strings.TrimSpace(text)
		if !hasTokenChar(text) {
			return // nothing FTS5 would index; an empty phrase matches nothing
		}
		t := `"` + strings.ReplaceAll(text, `"`, `""`) + `"`
		if prefix {
			t += "*"
		}
		terms = append(terms, t)
	}
	for q != "" {
		q = strings.TrimLeftFunc(q, unicode.IsSpace)
		if q == "" {
			break
		}
		if q[0] == '"' {
			phrase, rest, closed := strings.Cut(q[1:], `"`)
			prefix := closed && strings.HasPrefix(rest, "*")
			if prefix {
				rest = rest[1:]
			}
			add(phrase, prefix)
			q = rest
			continue
		}
		end := strings.IndexFunc(q, func(r rune) bool { return unicode.IsSpace(r) || r == '"' })
		if end < 0 {
			end = len(q)
		}
		word := q[:end]
		q = q[end:]
		switch word {
		case "AND", "OR", "NOT", "NEAR":
			continue
		}
		prefix := strings.HasSuffix(word, "*")
		add(strings.TrimRight(word, "*"), prefix)
	}
	if len(terms) == 0 {
		return "", ErrEmptyQuery
	}
	return strings.Join(terms, " OR "), nil
}

// hasTokenChar reports whether s holds a letter, digit or '_' (what the
// index's tokenizer keeps; other characters separate tokens).
func hasTokenChar(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool {
		return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Co, r)
	}) >= 0
}
