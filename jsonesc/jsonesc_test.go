package jsonesc

import (
	"encoding/json"
	"testing"
)

func TestAppendByte(t *testing.T) {
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
			if got := string(AppendByte([]byte("x"), tt.c)); got != "x"+tt.want {
				t.Errorf("AppendByte(%#x) = %q, want %q", tt.c, got, "x"+tt.want)
			}
		})
	}
}

// TestAgreesWithEncodingJSON: every byte AppendByte takes is escaped as
// encoding/json escapes it.
func TestAgreesWithEncodingJSON(t *testing.T) {
	for c := range byte(0x20) {
		checkAgrees(t, c)
	}
	checkAgrees(t, '"')
	checkAgrees(t, '\\')
}

func checkAgrees(t *testing.T, c byte) {
	t.Helper()
	want, err := json.Marshal(string([]byte{c}))
	if err != nil {
		t.Fatal(err)
	}
	if got := `"` + string(AppendByte(nil, c)) + `"`; got != string(want) {
		t.Errorf("byte %#x: %s, encoding/json writes %s", c, got, want)
	}
}
