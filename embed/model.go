package embed

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"math"
	"os"
	"path/filepath"
)

// The files of a model directory.
const (
	WeightsFile   = "model.safetensors"
	TokenizerFile = "tokenizer.json"
)

// Bounds on what Load reads.
const (
	// MaxHeaderBytes caps a safetensors header (JSON): a model with one
	// tensor needs a few hundred bytes.
	MaxHeaderBytes = 1 << 20
	// MaxTableBytes caps the embedding table (potion-base-8M's is 30 MB;
	// a 400,000 x 300 F32 table is 480 MB).
	MaxTableBytes = 1 << 30
	// MaxDim caps a vector's dimensions.
	MaxDim = 4096
	// MaxTokenizerBytes caps tokenizer.json.
	MaxTokenizerBytes = 256 << 20
)

// TensorName is the embedding table's name in a Model2Vec safetensors file.
const TensorName = "embeddings"

// Model is a loaded static embedding model. It is read-only after Load
// and safe for concurrent use.
type Model struct {
	dim    int
	table  []float32 // vocab rows of dim
	tok    *tokenizer
	source string // the directory, as given
	id     string
}

// ID names the model by its contents: the first 16 hex digits of the
// SHA-256 of its table and its tokenizer.json. Vectors stored with
// another ID were made by another model.
func (m *Model) ID() string { return m.id }

// Dim is the vectors' number of dimensions.
func (m *Model) Dim() int { return m.dim }

// Vocab is the number of rows of the embedding table.
func (m *Model) Vocab() int { return len(m.table) / m.dim }

// Dir is the directory the model was loaded from.
func (m *Model) Dir() string { return m.source }

// Load reads the model in dir. Every error names the file and says what
// is wrong with it.
func Load(dir string) (*Model, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("embedding model: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("embedding model: %s is not a directory (want a directory holding %s and %s)", dir, WeightsFile, TokenizerFile)
	}
	weights := filepath.Join(dir, WeightsFile)
	h := sha256.New()
	table, rows, dim, err := readSafetensors(weights, h)
	if err != nil {
		return nil, err
	}
	tokPath := filepath.Join(dir, TokenizerFile)
	tok, err := readTokenizer(tokPath, h)
	if err != nil {
		return nil, err
	}
	for w, id := range tok.vocab {
		if id < 0 || id >= rows {
			return nil, fmt.Errorf("embedding model: %s: token %q has id %d, outside the %d rows of %s", tokPath, w, id, rows, weights)
		}
	}
	return &Model{dim: dim, table: table, tok: tok, source: dir, id: hex.EncodeToString(h.Sum(nil))[:16]}, nil
}

// tensorInfo is one entry of a safetensors header.
type tensorInfo struct {
	DType       string  `json:"dtype"`
	Shape       []int64 `json:"shape"`
	DataOffsets []int64 `json:"data_offsets"`
}

// readSafetensors reads the F32 or F16 tensor "embeddings" of shape
// [rows, dim] from path: an 8-byte little-endian header length, the JSON
// header, then the data.
func readSafetensors(path string, h hash.Hash) (table []float32, rows, dim int, err error) {
	bad := func(format string, args ...any) ([]float32, int, int, error) {
		return nil, 0, 0, fmt.Errorf("embedding model: %s: "+format, append([]any{path}, args...)...)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("embedding model: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, 0, fmt.Errorf("embedding model: %w", err)
	}
	var lenBuf [8]byte
	if _, err := io.ReadFull(f, lenBuf[:]); err != nil {
		return bad("not a safetensors file (shorter than its 8-byte header length)")
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	if n == 0 || n > MaxHeaderBytes || int64(n) > st.Size()-8 {
		return bad("not a safetensors file (header length %d; at most %d and within the file's %d bytes)", n, MaxHeaderBytes, st.Size())
	}
	header := make([]byte, n)
	if _, err := io.ReadFull(f, header); err != nil {
		return bad("reading the header: %v", err)
	}
	var entries map[string]json.RawMessage
	if err := json.Unmarshal(header, &entries); err != nil {
		return bad("the header is not a JSON object: %v", err)
	}
	raw, ok := entries[TensorName]
	if !ok {
		return bad("no tensor %q (a Model2Vec model has its table under that name)", TensorName)
	}
	var t tensorInfo
	if err := json.Unmarshal(raw, &t); err != nil {
		return bad("tensor %q: %v", TensorName, err)
	}
	size := 0
	switch t.DType {
	case "F32":
		size = 4
	case "F16":
		size = 2
	default:
		return bad("tensor %q has dtype %q; F32 and F16 are read", TensorName, t.DType)
	}
	if len(t.Shape) != 2 || t.Shape[0] < 1 || t.Shape[1] < 1 || t.Shape[1] > MaxDim {
		return bad("tensor %q has shape %v; want [vocab, dim] with 1 <= dim <= %d", TensorName, t.Shape, MaxDim)
	}
	rows, dim = int(t.Shape[0]), int(t.Shape[1])
	if int64(rows)*int64(dim)*int64(size) > MaxTableBytes {
		return bad("tensor %q of shape %v is larger than %d bytes", TensorName, t.Shape, MaxTableBytes)
	}
	want := int64(rows) * int64(dim) * int64(size)
	data := st.Size() - 8 - int64(n)
	if len(t.DataOffsets) != 2 || t.DataOffsets[0] < 0 || t.DataOffsets[1]-t.DataOffsets[0] != want || t.DataOffsets[1] > data {
		return bad("tensor %q: data_offsets %v do not hold %d bytes within the file's %d bytes of data", TensorName, t.DataOffsets, want, data)
	}
	if _, err := f.Seek(8+int64(n)+t.DataOffsets[0], io.SeekStart); err != nil {
		return bad("%v", err)
	}
	buf := make([]byte, want)
	if _, err := io.ReadFull(f, buf); err != nil {
		return bad("reading tensor %q: %v", TensorName, err)
	}
	h.Write(header)
	h.Write(buf)
	table = make([]float32, rows*dim)
	for i := range table {
		var v float32
		if size == 4 {
			v = math.Float32frombits(binary.LittleEndian.Uint32(buf[4*i:]))
		} else {
			v = halfToFloat(binary.LittleEndian.Uint16(buf[2*i:]))
		}
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return bad("tensor %q holds a NaN or infinite value (row %d)", TensorName, i/dim)
		}
		table[i] = v
	}
	return table, rows, dim, nil
}

// halfToFloat converts an IEEE 754 half-precision value.
func halfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0 && frac == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal
		v := float32(frac) / 1024 / 16384
		if sign != 0 {
			v = -v
		}
		return v
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | frac<<13)
	}
	return math.Float32frombits(sign | (exp+112)<<23 | frac<<13)
}

// Embed returns the L2-normalised mean of the vectors of text's tokens,
// or nil when the model knows none of them (or their mean is zero).
func (m *Model) Embed(text string) []float32 {
	out := make([]float32, m.dim)
	n := 0
	m.tok.each(text, func(id int) {
		row := m.table[id*m.dim : (id+1)*m.dim]
		for i, v := range row {
			out[i] += v
		}
		n++
	})
	if n == 0 {
		return nil
	}
	var sum float64
	for _, v := range out {
		sum += float64(v) * float64(v)
	}
	if sum == 0 {
		return nil
	}
	scale := float32(1 / math.Sqrt(sum))
	for i := range out {
		out[i] *= scale
	}
	return out
}

// Dot is the dot product of two vectors of the same length (their cosine
// when both come from Embed).
func Dot(a, b []float32) float32 {
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// Encode is v as little-endian float32s, how the memory stores it.
func Encode(v []float32) []byte {
	out := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(x))
	}
	return out
}

// Decode reads Encode's bytes into dst (len(b) must be 4*len(dst)).
func Decode(b []byte, dst []float32) bool {
	if len(b) != 4*len(dst) {
		return false
	}
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return true
}
