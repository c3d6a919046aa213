package embed

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tinyModel writes a 2-dimensional model: "cat" and "kitten" point one way,
// "car" and "truck" another.
func tinyModel(t *testing.T, wordPiece bool) string {
	t.Helper()
	dir := t.TempDir()
	words := []string{"[UNK]", "cat", "kitten", "car", "truck", "park", "##ing", "##s"}
	vecs := [][]float32{{0, 0}, {1, 0.1}, {0.9, 0.2}, {0.1, 1}, {0.2, 0.9}, {0.5, 0.5}, {0, 0.3}, {0.3, 0}}
	if err := Write(dir, words, vecs, wordPiece); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestEmbed(t *testing.T) {
	for _, tc := range []struct {
		name      string
		wordPiece bool
		text      string
		want      []float32 // before normalisation; nil: no vector
	}{
		{"one word", false, "cat", []float32{1, 0.1}},
		{"case folded", false, "CAT", []float32{1, 0.1}},
		{"mean", false, "cat car", []float32{1.1, 1.1}},
		{"punctuation splits", false, "cat,car!", []float32{1.1, 1.1}},
		{"unknown words add nothing", false, "the cat sat", []float32{1, 0.1}},
		{"nothing known", false, "the dog", nil},
		{"wordlevel has no pieces", false, "parking", nil},
		{"wordpiece pieces", true, "parking", []float32{0.5, 0.8}},
		{"wordpiece whole word first", true, "cats", []float32{1.3, 0.1}},
		{"wordpiece unsplittable word is unknown", true, "parkx cat", []float32{1, 0.1}},
		{"empty", false, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Load(tinyModel(t, tc.wordPiece))
			if err != nil {
				t.Fatal(err)
			}
			got := m.Embed(tc.text)
			if tc.want == nil {
				if got != nil {
					t.Fatalf("Embed(%q) = %v, want nil", tc.text, got)
				}
				return
			}
			n := float32(math.Hypot(float64(tc.want[0]), float64(tc.want[1])))
			for i := range got {
				if d := got[i] - tc.want[i]/n; d > 1e-5 || d < -1e-5 {
					t.Fatalf("Embed(%q) = %v, want %v normalised", tc.text, got, tc.want)
				}
			}
		})
	}
}

func TestSimilarity(t *testing.T) {
	m, err := Load(tinyModel(t, false))
	if err != nil {
		t.Fatal(err)
	}
	if m.Dim() != 2 || m.Vocab() != 8 {
		t.Fatalf("dim %d vocab %d", m.Dim(), m.Vocab())
	}
	cat, kitten, truck := m.Embed("cat"), m.Embed("kitten"), m.Embed("truck")
	if Dot(cat, kitten) <= Dot(cat, truck) {
		t.Fatalf("cat~kitten %v <= cat~truck %v", Dot(cat, kitten), Dot(cat, truck))
	}
	v := make([]float32, 2)
	if !Decode(Encode(cat), v) || v[0] != cat[0] || v[1] != cat[1] {
		t.Fatalf("Decode(Encode(%v)) = %v", cat, v)
	}
	if Decode(Encode(cat)[:7], v) {
		t.Fatal("Decode of 7 bytes into 2 floats succeeded")
	}
}

// safetensors builds a safetensors file from a header and data.
func safetensors(header string, data []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	return append(append(b, header...), data...)
}

func TestLoadRefuses(t *testing.T) {
	f32 := make([]byte, 8*2*4)
	for _, tc := range []struct {
		name      string
		weights   []byte // nil: keep the tiny model's
		tokenizer string // "": keep the tiny model's
		want      string
	}{
		{"empty weights", []byte{}, "", "shorter than its 8-byte header"},
		{"header past the end", binary.LittleEndian.AppendUint64(nil, 100), "", "header length 100"},
		{"huge header", binary.LittleEndian.AppendUint64(nil, 1<<40), "", "at most"},
		{"not json", safetensors("{nope", nil), "", "not a JSON object"},
		{"no embeddings", safetensors(`{"other":{"dtype":"F32","shape":[8,2],"data_offsets":[0,64]}}`, f32), "", `no tensor "embeddings"`},
		{"dtype", safetensors(`{"embeddings":{"dtype":"I8","shape":[8,2],"data_offsets":[0,16]}}`, f32), "", `dtype "I8"`},
		{"shape", safetensors(`{"embeddings":{"dtype":"F32","shape":[64],"data_offsets":[0,64]}}`, f32), "", "shape [64]"},
		{"offsets short", safetensors(`{"embeddings":{"dtype":"F32","shape":[8,2],"data_offsets":[0,60]}}`, f32), "", "data_offsets"},
		{"offsets past the end", safetensors(`{"embeddings":{"dtype":"F32","shape":[8,2],"data_offsets":[8,72]}}`, f32), "", "data_offsets"},
		{"nan", safetensors(`{"embeddings":{"dtype":"F32","shape":[1,1],"data_offsets":[0,4]}}`, []byte{0, 0, 0xc0, 0x7f}), "", "NaN"},
		{"tokenizer not json", nil, "[", "not a tokenizer.json"},
		{"tokenizer model", nil, `{"model":{"type":"BPE","vocab":{"a":0}}}`, `model type "BPE"`},
		{"tokenizer empty vocab", nil, `{"model":{"type":"WordLevel","vocab":{}}}`, "vocab is empty"},
		{"id outside the table", nil, `{"model":{"type":"WordLevel","vocab":{"a":8}}}`, "outside the 8 rows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tinyModel(t, false)
			if tc.weights != nil {
				if err := os.WriteFile(filepath.Join(dir, WeightsFile), tc.weights, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tc.tokenizer != "" {
				if err := os.WriteFile(filepath.Join(dir, TokenizerFile), []byte(tc.tokenizer), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := Load(dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load: %v, want an error with %q", err, tc.want)
			}
			file := WeightsFile
			if tc.tokenizer != "" {
				file = TokenizerFile
			}
			if !strings.Contains(err.Error(), file) {
				t.Fatalf("Load: %v does not name %s", err, file)
			}
		})
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing")); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("Load of a missing directory: %v", err)
	}
}

func TestHalf(t *testing.T) {
	for _, tc := range []struct {
		h    uint16
		want float32
	}{{0x3c00, 1}, {0xc000, -2}, {0x3800, 0.5}, {0x0000, 0}, {0x0001, 5.9604645e-08}, {0x7bff, 65504}} {
		if got := halfToFloat(tc.h); got != tc.want {
			t.Errorf("halfToFloat(%#x) = %v, want %v", tc.h, got, tc.want)
		}
	}
}

// TestLoadF16 reads a table stored as F16: the same vectors as F32.
func TestLoadF16(t *testing.T) {
	dir := tinyModel(t, false)
	// 8 rows of 2: every value 0.5 (0x3800) but row 1, (1, -2).
	data := make([]byte, 0, 32)
	for i := range 16 {
		h := uint16(0x3800)
		switch i {
		case 2:
			h = 0x3c00
		case 3:
			h = 0xc000
		}
		data = binary.LittleEndian.AppendUint16(data, h)
	}
	header := `{"embeddings":{"dtype":"F16","shape":[8,2],"data_offsets":[0,32]}}`
	if err := os.WriteFile(filepath.Join(dir, WeightsFile), safetensors(header, data), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := m.Embed("cat")
	want := []float32{1 / float32(math.Sqrt(5)), -2 / float32(math.Sqrt(5))}
	for i := range want {
		if d := got[i] - want[i]; d > 1e-6 || d < -1e-6 {
			t.Fatalf("Embed(cat) from F16 = %v, want %v", got, want)
		}
	}
}
