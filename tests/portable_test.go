package tests

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// runCLI runs the server binary with args and returns stdout, stderr and
// the exit status.
func runCLI(t *testing.T, stdin []byte, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(serverBin, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

// memoryText is every row of the two memory tables, as text.
func memoryText(t *testing.T, path string) string {
	t.Helper()
	var b strings.Builder
	db := openDirect(t, path)
	for _, table := range []string{"memory_events", "memory_checkpoints"} {
		eachRowText(t, db, table, func(line string) { b.WriteString(line) })
	}
	return b.String()
}

func TestExportImportOverCLI(t *testing.T) {
	t.Parallel()
	dir := testDir(t)
	// The reference's file, grown by a server session (an event and a
	// checkpoint of this server, in the same file).
	ref := referenceDB(t)
	s := start(t, ref)
	s.ok("append_event", map[string]any{"kind": "decision", "content": "moved to the Go server \u2028 \"quoted\" é"})
	s.ok("checkpoint", map[string]any{"summary": "after the move"})
	s.c.Close()

	first := filepath.Join(dir, "first.jsonl")
	if out, errOut, code := runCLI(t, nil, "export", "--db", ref, "--out", first); code != 0 || out != "" || !strings.Contains(errOut, "exported 9 events and 2 checkpoints to "+first) {
		t.Fatalf("export: %d %q %q", code, out, errOut)
	}
	exported, err := os.ReadFile(first)
	if err != nil {
		t.Fatal(err)
	}
	wantVerify, _, code := runCLI(t, nil, "verify", "--db", ref)
	if code != 0 {
		t.Fatalf("verify --db: %d %s", code, wantVerify)
	}
	if got, errOut, code := runCLI(t, nil, "verify", "--jsonl", first); code != 0 || got != wantVerify {
		t.Fatalf("verify --jsonl: %d %q %q, want %q", code, got, errOut, wantVerify)
	}

	imported := filepath.Join(dir, "imported.db")
	if out, errOut, code := runCLI(t, nil, "import", "--db", imported, first); code != 0 || out != "imported 9 events and 2 checkpoints into "+imported+"\n" {
		t.Fatalf("import: %d %q %q", code, out, errOut)
	}
	// Round trip: the second export (to stdout) is byte-identical.
	second, errOut, code := runCLI(t, nil, "export", "--db", imported)
	if code != 0 || second != string(exported) {
		t.Fatalf("second export (%d, %q) differs:\n%s\n---\n%s", code, errOut, exported, second)
	}
	if got, _, code := runCLI(t, nil, "verify", "--db", imported); code != 0 || got != wantVerify {
		t.Fatalf("verify of the import: %q", got)
	}
	if got, want := memoryText(t, imported), memoryText(t, ref); got != want || !strings.Contains(got, "memory_checkpoints:[2 ") {
		t.Fatalf("rows differ:\n%s\n---\n%s", got, want)
	}
	// The imported file serves, with its index, and recalls.
	s2 := start(t, imported)
	if text := s2.ok("get_resume_context", map[string]any{"query": "notes table"}); !strings.Contains(text, "# recall: ") || strings.Contains(text, "no older events match") {
		t.Fatalf("recall on the import:\n%s", text)
	}

	// A tampered line: import refuses it, says which line and why, writes
	// no row; verify --jsonl reports the break with exit 1.
	lines := strings.SplitAfter(string(exported), "\n")
	lines[2] = strings.Replace(lines[2], `"content":"`, `"content":"not what was written: `, 1)
	tampered := []byte(strings.Join(lines, ""))
	target := filepath.Join(dir, "tampered.db")
	out, errOut, code := runCLI(t, tampered, "import", "--db", target, "-")
	if code != 1 || out != "" || !strings.Contains(errOut, "-: line 3: event 3 breaks the chain: stored hash does not match the recomputed hash") {
		t.Fatalf("tampered import: %d %q %q", code, out, errOut)
	}
	if _, err := os.Lstat(target); !os.IsNotExist(err) {
		t.Fatalf("a refused import left a database behind: %v", err)
	}
	got, _, code := runCLI(t, tampered, "verify", "--jsonl", "-")
	if code != 1 || !strings.Contains(got, `"ok": false`) || !strings.Contains(got, `"break_at_id": 3`) {
		t.Fatalf("verify --jsonl of the tampered file: %d %q", code, got)
	}
	// A target that already holds events.
	if _, errOut, code := runCLI(t, exported, "import", "--db", ref, "-"); code != 2 || !strings.Contains(errOut, "already holds memory events") {
		t.Fatalf("non-empty target: %d %q", code, errOut)
	}
}

// A memory whose texts hold bytes that are not UTF-8 (another program
// wrote them; the chain hashes the bytes as stored, so verify --db calls
// it intact) exports to a file that verify --jsonl accepts and import
// rebuilds with identical rows (issue 43 item 8): each such byte travels
// as \udcXX.
func TestExportNotUTF8OverCLI(t *testing.T) {
	t.Parallel()
	dir := testDir(t)
	ref := referenceDB(t)
	db := openDirect(t, ref)
	var head int64
	var prev string
	if err := db.QueryRow(`SELECT id, hash FROM memory_events ORDER BY id DESC LIMIT 1`).Scan(&head, &prev); err != nil {
		t.Fatal(err)
	}
	// Latin-1 é, a lone 0xff, a truncated sequence, a surrogate in
	// CESU-8, next to UTF-8 text; nothing the canonical form escapes, so
	// the canonical bytes below are written by hand.
	content := []byte("caf\xe9 \xff\xfe then \xe6\x97 and \xed\xa0\x80, beside é and \u65e5")
	const ts, sess = "2026-03-01T08:00:00Z", "20260301T080000Z-0bad"
	canon := fmt.Appendf(nil, `[%d,"%s","%s","note","%s","%s"]`, head+1, ts, sess, content, prev)
	sum := sha256.Sum256(canon)
	hash := hex.EncodeToString(sum[:])
	if _, err := db.Exec(`INSERT INTO memory_events (id, ts, session, kind, content, prev_hash, hash) VALUES (?, ?, ?, 'note', CAST(? AS TEXT), ?, ?)`,
		head+1, ts, sess, content, prev, hash); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO memory_checkpoints (ts, session, summary, last_event_id, head_hash) VALUES (?, ?, CAST(? AS TEXT), ?, ?)`,
		ts, sess, []byte("summary \xc3\x28 not UTF-8"), head+1, hash); err != nil {
		t.Fatal(err)
	}
	db.Close()
	// A server goes on appending on top of it.
	s := start(t, ref)
	s.ok("append_event", map[string]any{"content": "after the foreign bytes"})
	s.c.Close()

	wantVerify, _, code := runCLI(t, nil, "verify", "--db", ref)
	if code != 0 || !strings.Contains(wantVerify, `"ok": true`) {
		t.Fatalf("verify --db: %d %s", code, wantVerify)
	}
	export := filepath.Join(dir, "export.jsonl")
	if out, errOut, code := runCLI(t, nil, "export", "--db", ref, "--out", export); code != 0 {
		t.Fatalf("export: %d %q %q", code, out, errOut)
	}
	exported, err := os.ReadFile(export)
	if err != nil {
		t.Fatal(err)
	}
	if got, errOut, code := runCLI(t, nil, "verify", "--jsonl", export); code != 0 || got != wantVerify {
		t.Fatalf("verify --jsonl: %d %q %q, want %q", code, got, errOut, wantVerify)
	}
	if !utf8.Valid(exported) || !bytes.Contains(exported, []byte(`"content":"caf\udce9 \udcff\udcfe then \udce6\udc97 and \udced\udca0\udc80, beside é and 日"`)) ||
		!bytes.Contains(exported, []byte(`"summary":"summary \udcc3( not UTF-8"`)) {
		t.Fatalf("the export does not carry the bytes as \\udcXX:\n%s", exported)
	}
	imported := filepath.Join(dir, "imported.db")
	if out, errOut, code := runCLI(t, nil, "import", "--db", imported, export); code != 0 {
		t.Fatalf("import: %d %q %q", code, out, errOut)
	}
	if got, _, code := runCLI(t, nil, "verify", "--db", imported); code != 0 || got != wantVerify {
		t.Fatalf("verify --db of the import: %d %q, want %q", code, got, wantVerify)
	}
	if got, want := memoryText(t, imported), memoryText(t, ref); got != want || !strings.Contains(got, string(content)) {
		t.Fatalf("rows differ:\n%q\n---\n%q", got, want)
	}
	if second, errOut, code := runCLI(t, nil, "export", "--db", imported); code != 0 || second != string(exported) {
		t.Fatalf("second export (%d, %q) differs:\n%s\n---\n%s", code, errOut, exported, second)
	}
}
