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
	terms, err := recallTerms(q)
	if err != nil {
		return "", err
	}
	out := make([]string, len(terms))
	for i, t := range terms {
		out[i] = t.fts()
	}
	return strings.Join(out, " OR "), nil
}

// recallTerm is one word or phrase of a recall query.
type recallTerm struct {
	text           string
	prefix, phrase bool
}

// fts is the term as a quoted FTS5 string.
func (t recallTerm) fts() string {
	q := `"` + strings.ReplaceAll(t.text, `"`, `""`) + `"`
	if t.prefix {
		q += "*"
	}
	return q
}

// recallTerms reads a recall query (see RecallQuery) into its terms.
func recallTerms(q string) ([]recallTerm, error) {
	q = strings.ReplaceAll(q, "\x00", " ")
	var terms []recallTerm
	words := 0
	seen := make(map[string]bool)
	add := func(text string, prefix, phrase bool) {
		text = strings.TrimSpace(text)
		if !hasTokenChar(text) {
			return // nothing FTS5 would index; an empty phrase matches nothing
		}
		t := recallTerm{text: text, prefix: prefix, phrase: phrase}
		if seen[t.fts()] {
			return
		}
		seen[t.fts()] = true
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
			add(phrase, prefix, true)
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
		add(strings.TrimRight(word, "*"), prefix, false)
	}
	if len(terms) == 0 {
		return nil, ErrEmptyQuery
	}
	if words > MaxRecallTerms {
		return nil, fmt.Errorf("%w (%d)", ErrTooManyTerms, words)
	}
	return terms, nil
}

// recallMatch is the recall index's FTS5 expression for a query: the
// terms of RecallQuery, and beside each word that is an identifier the
// forms the index holds for its words (identifierForms): its adjacent
// words paired (parseConfig also searches parse_config, which the pairs
// column holds for prose "parse config", for parse_config and for
// parseConfig; max_update_rows the phrase "max_update update_rows") and,
// for a snake_case or kebab-case one, the name run together (cache_key
// also searches cachekey, the lower-case token of cacheKey). Pairs, not
// the words as a phrase: a word such as "orders" of orders_7 may be in
// every event, and a phrase reads every event's positions of it, while
// the pair orders_7 is as rare as the identifier. Porter stems every term
// as it stems the index. Phrases and prefixes are kept as written.
func recallMatch(q string) (string, error) {
	terms, err := recallTerms(q)
	if err != nil {
		return "", err
	}
	var out []string
	seen := make(map[string]bool)
	for _, t := range terms {
		out = append(out, t.fts())
		seen[strings.ToLower(t.fts())] = true
	}
	add := func(form string) {
		if q := (recallTerm{text: form}).fts(); !seen[q] {
			seen[q] = true
			out = append(out, q)
		}
	}
	for _, t := range terms {
		if t.phrase || t.prefix {
			continue
		}
		for _, f := range identifierForms(t.text) {
			add(f)
		}
	}
	// Two words written next to each other are also searched as their
	// pair, so that a row that says them together ranks above one that
	// says each somewhere ("parse config panic" finds parseConfig first).
	last := ""
	for _, t := range terms {
		if t.phrase || t.prefix {
			last = ""
			continue
		}
		words := pairWords(t.text)
		if len(words) == 0 {
			continue
		}
		if last != "" && pairable(last, words[0]) {
			add(last + "_" + words[0])
		}
		last = words[len(words)-1]
	}
	return strings.Join(out, " OR "), nil
}

// recallText is what the recall index's body holds of a text: the text,
// then the parts of its identifiers that the tokenizer would not find
// alone (identParts). It is also the text a vector is computed from.
func recallText(text string) string {
	parts := identParts(text, nil)
	if len(parts) == 0 {
		return text
	}
	return text + "\n" + strings.Join(parts, " ")
}

// recallPairs is what the recall index's pairs column holds of a text:
// each two adjacent words, joined by '_', in the order of the text, where
// the words are the text's tokens with every identifier split into its
// words (nameWords) and punctuation ignored, as a phrase ignores it.
// "the HTTP cache key" holds http_cache cache_key, and so does
// "httpCacheKey": a query for the identifier cache_key, cacheKey or
// cache-key then reads the pair's doclist, not those of "cache" and "key".
// Joined by '_' (a token character), a pair is never a word of prose
// ("data base" is data_base, not database). Consecutive pairs are
// adjacent in the column, so a longer identifier is a phrase of its pairs.
// A pair with a function word is left out (unpairedWords).
func recallPairs(text string) string {
	words := pairWords(text)
	if len(words) < 2 {
		return ""
	}
	var b strings.Builder
	for i := 1; i < len(words); i++ {
		if !pairable(words[i-1], words[i]) {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[i-1])
		b.WriteByte('_')
		b.WriteString(words[i])
	}
	return b.String()
}

// pairWords are the words recallPairs pairs: text's tokens in order, each
// split into its words by nameWords (lower case).
func pairWords(text string) []string {
	var out []string
	for text != "" {
		i := strings.IndexFunc(text, isTokenRune)
		if i < 0 {
			break
		}
		text = text[i:]
		end := strings.IndexFunc(text, func(r rune) bool { return !isTokenRune(r) })
		if end < 0 {
			end = len(text)
		}
		words, _ := nameWords(text[:end])
		out = append(out, words...)
		text = text[end:]
	}
	return out
}

// unpairedWords are the commonest English function words. A pair with one
// of them is not indexed: it would be in most rows that say the word, a
// doclist as long as the word's, and it adds to every row's length what
// bm25 then weighs against it. An identifier with such a pair (is_admin,
// to_string) is searched by its words as a phrase (identifierForms).
var unpairedWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields("a an and are as at be but by for from if in is it its no not of on or so that the then this to was we were with") {
		unpairedWords[w] = true
	}
}

// pairable reports whether the recall index holds the pair of a and b.
func pairable(a, b string) bool { return !unpairedWords[a] && !unpairedWords[b] }

// wordPairs is the pairs form of words w1..wk (k >= 2): w1_w2, or for
// more words the phrase of their pairs, w1_w2 w2_w3 ... (see recallPairs);
// the words as a phrase when a pair of them is not indexed (pairable).
func wordPairs(words []string) string {
	pairs := make([]string, len(words)-1)
	for i := range pairs {
		if !pairable(words[i], words[i+1]) {
			return strings.Join(words, " ")
		}
		pairs[i] = words[i] + "_" + words[i+1]
	}
	return strings.Join(pairs, " ")
}

// identifiers calls fn with each name in text: a run of word characters
// and hyphens between them, hyphens and underscores trimmed at its ends.
func identifiers(text string, fn func(name string)) {
	isWord := func(r rune) bool {
		return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Co, r)
	}
	for text != "" {
		i := strings.IndexFunc(text, isWord)
		if i < 0 {
			return
		}
		text = text[i:]
		end := strings.IndexFunc(text, func(r rune) bool { return !isWord(r) && r != '-' })
		if end < 0 {
			end = len(text)
		}
		fn(strings.Trim(text[:end], "-_"))
		text = text[end:]
	}
}

// nameWords splits a name at underscores and hyphens into pieces, and each
// piece at its camelCase changes (camelWords), in lower case; joined is the
// pieces run together when there were several (cache_key: cachekey).
func nameWords(name string) (words []string, joined string) {
	pieces := strings.FieldsFunc(name, func(r rune) bool { return r == '_' || r == '-' })
	if len(pieces) > 1 {
		joined = strings.ToLower(strings.Join(pieces, ""))
	}
	for _, p := range pieces {
		for _, w := range camelWords(p) {
			words = append(words, strings.ToLower(w))
		}
	}
	return words, joined
}

// identParts returns, for each distinct identifier in text, what the index
// adds beside the text, in order: its words when it has several (parseConfig:
// parse config; HTTPServer: http server; cache_key: cache key), kept
// together so that a phrase of them matches, then the pieces run together
// for a snake_case or kebab-case name (cachekey, golangcilint). A
// kebab-case name's words are not repeated (unicode61 splits them out of
// the text itself). Appended to parts.
func identParts(text string, parts []string) []string {
	seen := make(map[string]bool)
	identifiers(text, func(name string) {
		if seen[name] {
			return
		}
		seen[name] = true
		words, joined := nameWords(name)
		if len(words) > 1 && (strings.ContainsRune(name, '_') || len(words) > len(strings.FieldsFunc(name, func(r rune) bool { return r == '-' }))) {
			parts = append(parts, words...)
		}
		if joined != "" {
			parts = append(parts, joined)
		}
	})
	return parts
}

// maxFormWords bounds the words of an identifier whose pairs a query
// searches as a phrase (every pair is one more doclist to read); a longer
// one is searched as written and run together only.
const maxFormWords = 8

// identifierForms are the extra forms a query word that is an identifier
// is searched by: its words paired (wordPairs), and its pieces run
// together.
func identifierForms(word string) []string {
	var forms []string
	identifiers(word, func(name string) {
		words, joined := nameWords(name)
		if len(words) > 1 && len(words) <= maxFormWords {
			forms = append(forms, wordPairs(words))
		}
		if joined != "" {
			forms = append(forms, joined)
		}
	})
	return forms
}

// camelWords splits a camelCase or PascalCase word at each lower-to-upper
// change and before the last capital of a run of capitals followed by a
// lower-case letter (HTTPServer: HTTP, Server). Digits stay with what
// precedes them (utf8 stays whole). A word without such a change is one.
func camelWords(w string) []string {
	rs := []rune(w)
	var out []string
	start := 0
	for i := 1; i < len(rs); i++ {
		prev, cur := rs[i-1], rs[i]
		split := unicode.IsLower(prev) && unicode.IsUpper(cur) ||
			unicode.IsDigit(prev) && unicode.IsUpper(cur) ||
			unicode.IsUpper(prev) && unicode.IsUpper(cur) && i+1 < len(rs) && unicode.IsLower(rs[i+1])
		if split {
			out = append(out, string(rs[start:i]))
			start = i
		}
	}
	return append(out, string(rs[start:]))
}

// hasTokenChar reports whether s holds a letter, digit or '_' (what the
// index's tokenizer keeps; other characters separate tokens).
func hasTokenChar(s string) bool {
	return strings.IndexFunc(s, isTokenRune) >= 0
}

// countTokens counts the runs of token characters in s: the words FTS5
// looks up for it.
func countTokens(s string) int {
	n, in := 0, false
	for _, r := range s {
		tok := isTokenRune(r)
		if tok && !in {
			n++
		}
		in = tok
	}
	return n
}
