package embed

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
)

// Write writes a Model2Vec-format model into dir (created if missing):
// model.safetensors with vectors as the F32 tensor "embeddings" [len(words),
// dim], and a tokenizer.json with a lower-casing normalizer, a
// BertPreTokenizer, and a WordLevel model (or WordPiece with "##"
// continuations when wordPiece) whose vocab maps words[i] to i. The tests'
// tiny models and scripts/embedding-model's converter use it.
func Write(dir string, words []string, vectors [][]float32, wordPiece bool) error {
	if len(words) == 0 || len(words) != len(vectors) {
		return fmt.Errorf("embed.Write: %d words, %d vectors", len(words), len(vectors))
	}
	dim := len(vectors[0])
	data := make([]byte, 0, 4*dim*len(vectors))
	for i, v := range vectors {
		if len(v) != dim {
			return fmt.Errorf("embed.Write: vector %d has %d dimensions, not %d", i, len(v), dim)
		}
		for _, x := range v {
			data = binary.LittleEndian.AppendUint32(data, math.Float32bits(x))
		}
	}
	header, err := json.Marshal(map[string]any{
		TensorName:     tensorInfo{DType: "F32", Shape: []int64{int64(len(words)), int64(dim)}, DataOffsets: []int64{0, int64(len(data))}},
		"__metadata__": map[string]string{"format": "pt"},
	})
	if err != nil {
		return err
	}
	for len(header)%8 != 0 { // safetensors pads the header to 8 bytes
		header = append(header, ' ')
	}
	file := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	file = append(append(file, header...), data...)
	vocab := make(map[string]int, len(words))
	for i, w := range words {
		if _, dup := vocab[w]; dup {
			return fmt.Errorf("embed.Write: the word %q twice", w)
		}
		vocab[w] = i
	}
	model := map[string]any{"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"}
	if wordPiece {
		model = map[string]any{"type": "WordPiece", "vocab": vocab, "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100}
	}
	tok, err := json.Marshal(map[string]any{
		"version":       "1.0",
		"normalizer":    map[string]any{"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": nil, "lowercase": true},
		"pre_tokenizer": map[string]any{"type": "BertPreTokenizer"},
		"model":         model,
	})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, WeightsFile), file, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, TokenizerFile), tok, 0o644)
}
