package portable

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/memory"
)

// parseString reads a JSON string as readItems does, through a one-key line.
func parseString(encoded []byte) (string, error) {
	_, values, err := parseObject(append(append([]byte(`{"k":`), encoded...), '}'))
	if err != nil {
		return "", err
	}
	return values["k"].str, nil
}

// Bytes that are not UTF-8 travel as \udcXX, one escape a byte, and come
// back as the same bytes (issue 43 item 8).
func TestExportStringNotUTF8(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"UTF-8 text", "café \u2028 日本 🚀", `"café ` + "\u2028" + ` 日本 🚀"`},
		{"escapes as SPEC 5.1", "\"q\" \\ \n\x01\x7f", `"\"q\" \\ \n\u0001` + "\x7f" + `"`},
		{"Latin-1", "caf\xe9", `"caf\udce9"`},
		{"lone bytes", "\xff\xfe\x80", `"\udcff\udcfe\udc80"`},
		{"truncated sequence", "\xe6\x97a", `"\udce6\udc97a"`},
		{"surrogate in CESU-8", "\xed\xa0\x80", `"\udced\udca0\udc80"`},
		{"overlong NUL", "\xc0\x80", `"\udcc0\udc80"`},
		{"above U+10FFFF", "\xf4\x90\x80\x80", `"\udcf4\udc90\udc80\udc80"`},
		{"lead byte before text", "\xc3é", `"\udcc3é"`},
		{"text before a continuation byte", "é\xa9", `"é\udca9"`},
		{"with escapes", "\xff\n\"", `"\udcff\n\""`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := appendExportBytes(nil, []byte(c.in))
			if string(got) != c.want {
				t.Fatalf("appendExportBytes(%q) = %s, want %s", c.in, got, c.want)
			}
			if s := appendExportString(nil, c.in); !bytes.Equal(s, got) {
				t.Fatalf("appendExportString = %s, appendExportBytes = %s", s, got)
			}
			back, err := parseString(got)
			if err != nil || back != c.in {
				t.Fatalf("read back %q, %v; want %q", back, err, c.in)
			}
		})
	}
}

// An escape stands for a byte that is not UTF-8 where it stands, and for
// nothing else: one row, one way to write it.
func TestParseStringRefusesNonCanonicalBytes(t *testing.T) {
	for _, c := range []struct{ name, in, msg string }{
		{"é as two escapes", `"\udcc3\udca9"`, `stands for a byte of the UTF-8 text "é"`},
		{"rocket as escapes", `"a\udcf0\udc9f\udc9a\udc80"`, `stands for a byte of the UTF-8 text "🚀"`},
		{"escape then an escaped character", `"\udcc3` + `\u0029"`, ""}, // 0xc3 0x29 is not UTF-8: fine
		{"ASCII as an escape", `"\udc41"`, "half of a surrogate pair"},
		{"below 0x80", `"\udc7f"`, "half of a surrogate pair"},
		{"lone high surrogate", `"\ud800"`, "half of a surrogate pair"},
		{"high then byte escape is a pair", `"\ud800\udc80"`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseString([]byte(c.in))
			if c.msg == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if again, err := parseString(appendExportString(nil, got)); err != nil || again != got {
					t.Fatalf("re-encoded: %q, %v; want %q", again, err, got)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("parse %s = %q, %v; want an error with %q", c.in, got, err, c.msg)
			}
		})
	}
}

// Any bytes export to UTF-8 that reads back as the same bytes.
func FuzzExportString(f *testing.F) {
	for _, s := range []string{"", "plain", "caf\xe9", "\xed\xa0\x80", "\"\\\n\x00", "日本\xff語", "\xf0\x9f\x9a"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, s []byte) {
		enc := appendExportBytes(nil, s)
		if !utf8.Valid(enc) {
			t.Fatalf("export of %q is not UTF-8: %q", s, enc)
		}
		if !bytes.Equal(enc, appendExportString(nil, string(s))) {
			t.Fatalf("appendExportString and appendExportBytes differ on %q", s)
		}
		if utf8.Valid(s) && !bytes.Equal(enc, memory.AppendCanonicalBytes(nil, s)) {
			t.Fatalf("UTF-8 %q is not written in the canonical form: %s", s, enc)
		}
		back, err := parseString(enc)
		if err != nil || back != string(s) {
			t.Fatalf("%q -> %s -> %q, %v", s, enc, back, err)
		}
	})
}

// Whatever string the reader accepts, the writer writes back to a string
// the reader reads as the same bytes.
func FuzzParseString(f *testing.F) {
	for _, s := range []string{`"a"`, `"\udcff"`, `"\udcc3\udca9"`, `"\ud83d\ude80"`, `"\u00e9\udce9"`, `"\udce6\udc97a"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := parseString(in)
		if err != nil {
			return
		}
		enc := appendExportString(nil, got)
		if back, err := parseString(enc); err != nil || back != got {
			t.Fatalf("%s -> %q -> %s -> %q, %v", in, got, enc, back, err)
		}
	})
}
