package memory

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
)

// ErrEmptyQuery: get_resume_context's query has no word to search for.
var ErrEmptyQuery = errors.New("query has no words to search for")

// MaxRecallTerms bounds the words of a recall query (a phrase's words each
// count): every word is one more index lookup, and a short prefix (w*)
// reads every indexed word it starts.
const MaxRecallTerms = 32

// ErrTooManyTerms: the recall query has more than MaxRecallTerms words.
var ErrTooManyTerms = fmt.Errorf("query has more than %d words", MaxRecallTerms)

// RecallTimeoutError: the recall ran out of its budget (--query-timeout)
// and was interrupted; the answer is not partial, there is none.
type RecallTimeoutError struct{ Budget time.Duration }

func (e *RecallTimeoutError) Error() string {
	return fmt.Sprintf("recall stopped after %v", e.Budget)
}

// RecallQuery turns get_resume_context's query into an FTS5 expression
// that cannot fail to parse: every word becomes a quoted FTS5 string and
// the words are joined with OR, so that bm25 ranks the events that hold
// more of them, and rarer ones, first (an agent recalling "login cookie
// bug" wants the event about the cookie even if it never says "bug").
// A "double-quoted phrase" stays a phrase, a trailing * keeps a prefix
// search (cach*), and the operators AND, OR, NOT and NEAR are dropped:
// whoever needs FTS5's full syntax writes the MATCH with read_query.
//
// Any string gives an expression or an error of this package: a NUL (which
// would end FTS5's reading of the expression) separates words like white
// space, the same word twice is searched once, and more than
// MaxRecallTerms words are ErrTooManyTerms.
func RecallQuery(q string) (string, error) {
	q = strings.ReplaceAll(q, "\x00", " ")
	var terms []string
	words := 0
	seen := make(map[string]bool)
	add := func(text string, prefix bool) {
		text = strings.TrimSpace(text)
		if !hasTokenChar(text) {
			return // nothing FTS5 would index; an empty phrase matches nothing
		}
		t := `"` + strings.ReplaceAll(text, `"`, `""`) + `"`
		if prefix {
			t += "*"
		}
		if seen[t] {
			return
		}
		seen[t] = true
		words += countTokens(text)
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
	if words > MaxRecallTerms {
		return "", fmt.Errorf("%w (%d)", ErrTooManyTerms, words)
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

// countTokens counts the runs of token characters in s: the words FTS5
// looks up for it.
func countTokens(s string) int {
	n, in := 0, false
	for _, r := range s {
		tok := r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Co, r)
		if tok && !in {
			n++
		}
		in = tok
	}
	return n
}
