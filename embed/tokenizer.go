package embed

import (
	"encoding/json"
	"fmt"
	"hash"
	"os"
	"strings"
	"unicode"
	"unicode/utf8"
)

// tokenizer is the part of a HuggingFace tokenizer.json that a static
// model needs: lower-casing (when the normalizer asks for it), words split
// at white space and punctuation (what BertPreTokenizer and Whitespace
// do), and each word looked up whole (WordLevel) or in greedy longest
// pieces with a continuation prefix (WordPiece, "##"). Unknown words add
// nothing (Model2Vec leaves the unknown token out of the mean).
type tokenizer struct {
	vocab     map[string]int
	lowercase bool
	wordPiece bool
	prefix    string // WordPiece's continuing_subword_prefix
	maxChars  int    // a longer word is unknown (WordPiece)
	unk       string
}

// tokenizerFile is what readTokenizer reads of tokenizer.json.
type tokenizerFile struct {
	Normalizer *normalizer `json:"normalizer"`
	Model      struct {
		Type                    string         `json:"type"`
		Vocab                   map[string]int `json:"vocab"`
		UnkToken                string         `json:"unk_token"`
		ContinuingSubwordPrefix *string        `json:"continuing_subword_prefix"`
		MaxInputCharsPerWord    int            `json:"max_input_chars_per_word"`
	} `json:"model"`
}

type normalizer struct {
	Type        string       `json:"type"`
	Lowercase   *bool        `json:"lowercase"`
	Normalizers []normalizer `json:"normalizers"`
}

// lowers reports whether the normalizer lower-cases: Lowercase,
// BertNormalizer with lowercase (its default), or a Sequence holding one.
func (n *normalizer) lowers() bool {
	if n == nil {
		return false
	}
	switch n.Type {
	case "Lowercase":
		return true
	case "BertNormalizer":
		return n.Lowercase == nil || *n.Lowercase
	case "Sequence":
		for i := range n.Normalizers {
			if n.Normalizers[i].lowers() {
				return true
			}
		}
	}
	return false
}

func readTokenizer(path string, h hash.Hash) (*tokenizer, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("embedding model: %w", err)
	}
	if st.Size() > MaxTokenizerBytes {
		return nil, fmt.Errorf("embedding model: %s is larger than %d bytes", path, MaxTokenizerBytes)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("embedding model: %w", err)
	}
	h.Write(b)
	var f tokenizerFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("embedding model: %s is not a tokenizer.json: %v", path, err)
	}
	t := &tokenizer{vocab: f.Model.Vocab, lowercase: f.Normalizer.lowers(), unk: f.Model.UnkToken, maxChars: 100}
	switch f.Model.Type {
	case "WordLevel":
	case "WordPiece":
		t.wordPiece, t.prefix = true, "##"
		if f.Model.ContinuingSubwordPrefix != nil {
			t.prefix = *f.Model.ContinuingSubwordPrefix
		}
		if f.Model.MaxInputCharsPerWord > 0 {
			t.maxChars = f.Model.MaxInputCharsPerWord
		}
	default:
		return nil, fmt.Errorf("embedding model: %s: model type %q; WordLevel and WordPiece are read", path, f.Model.Type)
	}
	if len(t.vocab) == 0 {
		return nil, fmt.Errorf("embedding model: %s: the model's vocab is empty", path)
	}
	return t, nil
}

// isPunct is what splits words besides white space (BertPreTokenizer:
// Unicode punctuation and the ASCII symbols).
func isPunct(r rune) bool {
	return unicode.IsPunct(r) || unicode.IsSymbol(r) || r < 128 && !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.IsSpace(r)
}

// each calls fn with the vocabulary id of each token of text.
func (t *tokenizer) each(text string, fn func(id int)) {
	if t.lowercase {
		text = strings.ToLower(text)
	}
	for text != "" {
		r, size := utf8.DecodeRuneInString(text)
		switch {
		case unicode.IsSpace(r) || unicode.IsControl(r) || r == utf8.RuneError:
			text = text[size:]
		case isPunct(r):
			t.word(text[:size], fn)
			text = text[size:]
		default:
			end := strings.IndexFunc(text, func(r rune) bool {
				return unicode.IsSpace(r) || unicode.IsControl(r) || r == utf8.RuneError || isPunct(r)
			})
			if end < 0 {
				end = len(text)
			}
			t.word(text[:end], fn)
			text = text[end:]
		}
	}
}

// word looks one pre-token up.
func (t *tokenizer) word(w string, fn func(id int)) {
	if !t.wordPiece {
		if id, ok := t.vocab[w]; ok && w != t.unk {
			fn(id)
		}
		return
	}
	if utf8.RuneCountInString(w) > t.maxChars {
		return
	}
	var ids []int
	for start := 0; start < len(w); {
		end := len(w)
		found := -1
		for end > start {
			piece := w[start:end]
			if start > 0 {
				piece = t.prefix + piece
			}
			if id, ok := t.vocab[piece]; ok {
				found = id
				break
			}
			_, size := utf8.DecodeLastRuneInString(w[start:end])
			end -= size
		}
		if found < 0 {
			return // WordPiece: a word that does not split into pieces is unknown
		}
		ids = append(ids, found)
		start = end
	}
	for _, id := range ids {
		fn(id)
	}
}
