package memory

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/render"
)

type vector struct {
	ID           int64  `json:"id"`
	TS           string `json:"ts"`
	Session      string `json:"session"`
	KindInput    string `json:"kind_input"`
	ContentInput string `json:"content_input"`
	Kind         string `json:"kind"`
	Content      string `json:"content"`
	PrevHash     string `json:"prev_hash"`
	CanonicalHex string `json:"canonical_utf8_hex"`
	Hash         string `json:"hash"`
}

// The hash vectors and the database made by the reference server are
// copies of the workspace's ../shared/testdata, kept here so that a clone
// of the project runs every test; TestSharedTestdata pins them.
const (
	vectorsPath   = "testdata/chain_vectors.json"
	referencePath = "testdata/reference-memory.db"
)

func loadVectors(t testing.TB) []vector {
	t.Helper()
	data, err := os.ReadFile(vectorsPath)
	if err != nil {
		t.Fatalf("read vectors: %v", err)
	}
	var doc struct {
		Vectors []vector `json:"vectors"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("parse vectors: %v", err)
	}
	if len(doc.Vectors) == 0 {
		t.Fatal("no vectors")
	}
	return doc.Vectors
}

func TestVectors(t *testing.T) {
	for _, v := range loadVectors(t) {
		t.Run(strconv.FormatInt(v.ID, 10), func(t *testing.T) {
			kind, content := Strip(v.KindInput), Strip(v.ContentInput)
			if kind != v.Kind {
				t.Errorf("Strip(kind) = %q, want %q", kind, v.Kind)
			}
			if content != v.Content {
				t.Errorf("Strip(content) = %q, want %q", content, v.Content)
			}
			got := Canonical(v.ID, v.TS, v.Session, kind, content, v.PrevHash)
			want, _ := hex.DecodeString(v.CanonicalHex)
			if !bytes.Equal(got, want) {
				t.Errorf("canonical:\n got %q\nwant %q", got, want)
			}
			if h := Hash(v.ID, v.TS, v.Session, kind, content, v.PrevHash); h != v.Hash {
				t.Errorf("hash = %s, want %s", h, v.Hash)
			}
		})
	}
}

// pySpace is every code point for which Python 3's str.isspace() is true,
// i.e. what str.strip() removes (generated with CPython 3).
var pySpace = []rune{
	0x9, 0xa, 0xb, 0xc, 0xd, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0, 0x1680,
	0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a,
	0x2028, 0x2029, 0x202f, 0x205f, 0x3000,
}

func TestStripMatchesPython(t *testing.T) {
	want := map[rune]bool{}
	for _, r := range pySpace {
		want[r] = true
	}
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if r >= 0xd800 && r <= 0xdfff {
			continue
		}
		s := string(r)
		if got := Strip(s) == ""; got != want[r] {
			t.Errorf("U+%04X: stripped=%v, Python strips=%v", r, got, want[r])
		}
	}
	cases := []struct{ in, want string }{
		{"", ""},
		{"  a b  ", "a b"},
		{"\u200ba\u200b", "\u200ba\u200b"}, // zero width space is not White_Space
		{"\u180ea", "\u180ea"},             // nor the Mongolian vowel separator
		{"\x1c\x1d x \x1e\x1f", "x"},
		{"\u3000\u00a0x\u2029", "x"},
		{"a\nb", "a\nb"},
	}
	for _, c := range cases {
		t.Run(strconv.Quote(c.in), func(t *testing.T) {
			if got := Strip(c.in); got != c.want {
				t.Errorf("Strip(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

func TestCanonicalEscapes(t *testing.T) {
	cases := []struct{ content, want string }{
		{"<>&", `"<>&"`},
		{"\u2028\u2029\x7f", "\"\u2028\u2029\x7f\""},
		{"\x00\x1f\x0b", `"\u0000\u001f\u000b"`},
		{"\b\f\n\r\t", `"\b\f\n\r\t"`},
		{`"\`, `"\"\\"`},
		{"é🚀", `"é🚀"`},
	}
	for _, c := range cases {
		t.Run(strconv.Quote(c.content), func(t *testing.T) {
			got := string(Canonical(-7, "", "", "", c.content, ""))
			want := `[-7,"","","",` + c.want + `,""]`
			if got != want {
				t.Errorf("got %s, want %s", got, want)
			}
		})
	}
}

func TestNewSession(t *testing.T) {
	now := time.Date(2026, 1, 5, 10, 0, 0, 0, time.FixedZone("X", 3600))
	re := regexp.MustCompile(`^20260105T090000Z-[0-9a-f]{4}$`)
	for i := 0; i < 20; i++ {
		if s := NewSession(now); !re.MatchString(s) {
			t.Fatalf("NewSession = %q", s)
		}
	}
}

func FuzzCanonical(f *testing.F) {
	f.Add(int64(1), "2026-01-05T09:00:00Z", "20260105T090000Z-a1b2", "note", "first note", GenesisHash)
	f.Add(int64(-1), "", "", "", "\x00\"\\\u2028\x7f", "")
	f.Fuzz(func(t *testing.T, id int64, ts, session, kind, content, prev string) {
		c := Canonical(id, ts, session, kind, content, prev)
		if h := Hash(id, ts, session, kind, content, prev); len(h) != 64 {
			t.Fatalf("hash %q", h)
		}
		for _, s := range []string{kind, content} {
			st := Strip(s)
			if Strip(st) != st {
				t.Fatalf("Strip not idempotent on %q", s)
			}
		}
		fields := []string{ts, session, kind, content, prev}
		for _, s := range fields {
			if !utf8.ValidString(s) {
				return // raw invalid bytes are kept; encoding/json would replace them
			}
		}
		dec := json.NewDecoder(bytes.NewReader(c))
		dec.UseNumber()
		var arr []any
		if err := dec.Decode(&arr); err != nil {
			t.Fatalf("canonical %q does not parse: %v", c, err)
		}
		if len(arr) != 6 || arr[0] != json.Number(strconv.FormatInt(id, 10)) {
			t.Fatalf("canonical %q parsed to %v", c, arr)
		}
		for i, s := range fields {
			if arr[i+1] != s {
				t.Fatalf("field %d: %q round-trips to %q", i, s, arr[i+1])
			}
		}
		if bytes.ContainsAny(c, "\n\r") || strings.Contains(string(c), "\\u00"+"3c") {
			t.Fatalf("canonical %q has raw newlines or HTML escapes", c)
		}
	})
}

// The word-at-a-time escaper gives the bytes of the plain one wherever the
// bytes that need escaping sit.
func TestCanonicalStringFastPath(t *testing.T) {
	specials := []string{"\"", "\\", "\x00", "\x1f", "\n", "\x7f", "é", "\xff", "<", " ", "\u2028"}
	var inputs []string
	for _, sp := range specials {
		for pos := range 20 {
			for _, n := range []int{0, 1, 7, 8, 9, 16, 23} {
				s := strings.Repeat("a", pos) + sp + strings.Repeat("b", n)
				inputs = append(inputs, s, sp+s+sp, strings.Repeat(sp, pos))
			}
		}
	}
	inputs = append(inputs, "", "plain text of more than eight bytes", strings.Repeat("x\"y", 100))
	for _, s := range inputs {
		want := string(render.AppendJSONString(nil, s, render.KeepBytes))
		if got := string(AppendCanonicalBytes(nil, []byte(s))); got != want {
			t.Fatalf("bytes %q: got %q, want %q", s, got, want)
		}
	}
}

func FuzzCanonicalBytes(f *testing.F) {
	f.Add("plain")
	f.Add("\x00\"\\\u2028\x7f é 12345678")
	f.Fuzz(func(t *testing.T, s string) {
		want := render.AppendJSONString(nil, s, render.KeepBytes)
		if got := AppendCanonicalBytes(nil, []byte(s)); !bytes.Equal(got, want) {
			t.Fatalf("bytes %q: got %q, want %q", s, got, want)
		}
	})
}
