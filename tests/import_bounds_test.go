package tests

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Imports read an untrusted file (issue 29 item 8, SPEC 5.4): keys match
// exactly and once, text is UTF-8, verify --jsonl judges checkpoints as
// import does, and a refused import leaves nothing behind.
func TestImportUntrustedOverCLI(t *testing.T) {
	t.Parallel()
	dir := testDir(t)
	ref := referenceDB(t)
	good, errOut, code := runCLI(t, nil, "export", "--db", ref)
	if code != 0 {
		t.Fatalf("export: %d %s", code, errOut)
	}
	lines := strings.SplitAfter(good, "\n")
	cp := -1
	for i, l := range lines {
		if strings.Contains(l, `"type":"checkpoint"`) {
			cp = i
			break
		}
	}
	if cp < 2 {
		t.Fatalf("no checkpoint after the first event in the export: %q", lines)
	}
	edit := func(i int, f func(string) string) []byte {
		c := append([]string(nil), lines...)
		c[i] = f(c[i])
		return []byte(strings.Join(c, ""))
	}
	moved := append([]string(nil), lines...)
	moved[cp], moved[cp-1] = moved[cp-1], moved[cp]
	cases := []struct {
		name string
		file []byte
		msg  string
	}{
		// jq and Python read "benign"; Go's encoding/json read "evil".
		{"benign and evil", edit(2, func(l string) string {
			return strings.Replace(l, `"content":`, `"content":"benign","CONTENT":`, 1)
		}), `line 3: unknown field "CONTENT"`},
		{"key twice", edit(2, func(l string) string { return strings.Replace(l, `"content":`, `"content":"benign","content":`, 1) }), `key "content" appears twice`},
		{"not UTF-8", edit(2, func(l string) string { return strings.Replace(l, `"content":"`, "\"content\":\"\xc3\x28", 1) }), "is not UTF-8"},
		{"lone surrogate", edit(2, func(l string) string { return strings.Replace(l, `"content":"`, `"content":"\udc00`, 1) }), "surrogate"},
		{"checkpoint moved", []byte(strings.Join(moved, "")), "checkpoint 1 is anchored to event"},
	}
	// Bytes that are not UTF-8, hashed as Go's encoding/json would read
	// them (U+FFFD): such a file verified, though no two readers agree on
	// its text.
	content := "ok \ufffd"
	canon, _ := json.Marshal([]any{1, "2026-03-01T08:00:00Z", "20260301T080000Z-ref0", "note", content, strings.Repeat("0", 64)})
	sum := sha256.Sum256(canon)
	line := fmt.Sprintf(`{"type":"event","id":1,"ts":"2026-03-01T08:00:00Z","session":"20260301T080000Z-ref0","kind":"note","content":"ok %s","prev_hash":"%s","hash":"%s"}`+"\n",
		"\xff", strings.Repeat("0", 64), hex.EncodeToString(sum[:]))
	cases = append(cases, struct {
		name string
		file []byte
		msg  string
	}{"not UTF-8, hashed as U+FFFD", []byte(line), "byte 114 is not UTF-8 text (0xff)"})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// verify --jsonl refuses what import refuses: exit 2, not an
			// intact chain.
			out, errOut, code := runCLI(t, c.file, "verify", "--jsonl", "-")
			if code != 2 || !strings.Contains(errOut, c.msg) {
				t.Fatalf("verify --jsonl: %d %q %q, want exit 2 and %q", code, out, errOut, c.msg)
			}
			sub := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-"))
			if err := os.Mkdir(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			target := filepath.Join(sub, "new.db")
			out, errOut, code = runCLI(t, c.file, "import", "--db", target, "-")
			if code != 1 || out != "" || !strings.Contains(errOut, c.msg) {
				t.Fatalf("import: %d %q %q, want exit 1 and %q", code, out, errOut, c.msg)
			}
			if left, _ := os.ReadDir(sub); len(left) != 0 {
				t.Fatalf("a refused import left %v behind", left)
			}
		})
	}
	// The untouched export still verifies and imports.
	if _, errOut, code := runCLI(t, []byte(good), "verify", "--jsonl", "-"); code != 0 {
		t.Fatalf("verify --jsonl of the export: %d %s", code, errOut)
	}
	if _, errOut, code := runCLI(t, []byte(good), "import", "--db", filepath.Join(dir, "ok.db"), "-"); code != 0 {
		t.Fatalf("import of the export: %d %s", code, errOut)
	}
}
