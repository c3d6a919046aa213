package render

import (
	"encoding/json"
	"testing"
)

func TestAppendJSONEscape(t *testing.T) {
	tests := []struct {
		c    byte
		want string
	}{
		{'"', `\"`},
		{'\\', `\\`},
		{'\b', `\b`},
		{'\f', `\f`},
		{'\n', `\n`},
		{'\r', `\r`},
		{'\t', `\t`},
		{0x00, `\u0000`},
		{0x1b, `\u001b`},
		{0x1f, `\u001f`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := string(AppendJSONEscape([]byte("x"), tt.c)); got != "x"+tt.want {
				t.Errorf("AppendJSONEscape(%#x) = %q, want %q", tt.c, got, "x"+tt.want)
			}
		})
	}
}

// TestJSONEscapeAgreesWithEncodingJSON: every byte AppendJSONEscape takes is escaped as
// encoding/json escapes it.
func TestJSONEscapeAgreesWithEncodingJSON(t *testing.T) {
	for c := range byte(0x20) {
		checkEscapeAgrees(t, c)
	}
	checkEscapeAgrees(t, '"')
	checkEscapeAgrees(t, '\\')
}

func checkEscapeAgrees(t *testing.T, c byte) {
	t.Helper()
	want, err := json.Marshal(string([]byte{c}))
	if err != nil {
		t.Fatal(err)
	}
	if got := `"` + string(AppendJSONEscape(nil, c)) + `"`; got != string(want) {
		t.Errorf("byte %#x: %s, encoding/json writes %s", c, got, want)
	}
}
