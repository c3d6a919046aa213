package tests

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The server tables defend themselves and recall is bounded (issue 29
// items 2 and 6; SPEC 5.4, 5.6).

// TestAppendRefusesDroppedRowOverStdio: a trigger another program adds
// while the server runs (BEFORE INSERT ... RAISE(IGNORE)) cannot make
// append_event or checkpoint answer "ok" for a row that was not stored.
func TestAppendRefusesDroppedRowOverStdio(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	s := start(t, db)
	s.ok("append_event", map[string]any{"content": "first"})
	direct := openDirect(t, db)
	for _, ddl := range []string{
		`CREATE TRIGGER drop_secret BEFORE INSERT ON memory_events WHEN NEW.content LIKE '%secret%' BEGIN SELECT RAISE(IGNORE); END`,
		`CREATE TRIGGER drop_cp BEFORE INSERT ON memory_checkpoints WHEN NEW.summary LIKE '%secret%' BEGIN SELECT RAISE(IGNORE); END`,
	} {
		if _, err := direct.Exec(ddl); err != nil {
			t.Fatal(err)
		}
	}
	if text := s.fails("append_event", map[string]any{"content": "the secret plan"}, "DATABASE_UNAVAILABLE"); !strings.Contains(text, "not stored") {
		t.Fatalf("append_event: %q", text)
	}
	if text := s.fails("checkpoint", map[string]any{"summary": "a secret summary"}, "DATABASE_UNAVAILABLE"); !strings.Contains(text, "not stored") {
		t.Fatalf("checkpoint: %q", text)
	}
	s.ok("append_event", map[string]any{"content": "second"})
	var events, checkpoints int
	if err := direct.QueryRow(`SELECT (SELECT count(*) FROM memory_events), (SELECT count(*) FROM memory_checkpoints)`).Scan(&events, &checkpoints); err != nil {
		t.Fatal(err)
	}
	if events != 2 || checkpoints != 0 {
		t.Fatalf("%d events, %d checkpoints; want 2 and 0", events, checkpoints)
	}
}

// writeExport writes an export of n events whose contents are words
// random words each, for the recall tests (ASCII without <>&, so
// json.Marshal gives the canonical form).
func writeExport(t *testing.T, path string, n, words int) {
	t.Helper()
	var b bytes.Buffer
	prev := strings.Repeat("0", 64)
	rng := rand.New(rand.NewSource(29))
	const ts, session = "2026-03-01T08:00:00Z", "20260301T080000Z-ref0"
	for id := 1; id <= n; id++ {
		var w []string
		for range words {
			w = append(w, fmt.Sprintf("w%05x", rng.Intn(1<<20)))
		}
		content := strings.Join(w, " ")
		canon, _ := json.Marshal([]any{id, ts, session, "note", content, prev})
		sum := sha256.Sum256(canon)
		hash := hex.EncodeToString(sum[:])
		line, _ := json.Marshal(map[string]any{"type": "event", "id": id, "ts": ts, "session": session, "kind": "note", "content": content, "prev_hash": prev, "hash": hash})
		b.Write(append(line, '\n'))
		prev = hash
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRecallBoundedOverStdio: recall runs under --query-timeout (TIMEOUT
// with a hint), bounds its words, and no query string answers a database
// error.
func TestRecallBoundedOverStdio(t *testing.T) {
	t.Parallel()
	dir := testDir(t)
	export, db := filepath.Join(dir, "big.jsonl"), filepath.Join(dir, "big.db")
	// 20,000 events of 30 words: 600,000 index entries, all starting with
	// w; the query below reads them all about twice (w*, then w0* to wf*
	// and w00* to w0e*), which takes seconds, far beyond 0.1 s.
	writeExport(t, export, 20_000, 30)
	if _, errOut, code := runCLI(t, nil, "import", "--db", db, export); code != 0 {
		t.Fatalf("import: %d %s", code, errOut)
	}
	s := start(t, db, "--query-timeout", "0.1")
	// The import fills the full-text index; the recall index is built by
	// the server's first start, in the background for this many rows.
	if !waitFor(time.Minute, func() bool {
		text, isErr := s.call("get_resume_context", map[string]any{"max_events": 1, "query": "zzz"})
		return !isErr && !strings.Contains(text, "catching up")
	}) {
		t.Fatal("the recall index did not catch up within a minute")
	}
	terms := []string{"w*"}
	for _, h := range "0123456789abcdef" {
		terms = append(terms, "w"+string(h)+"*")
	}
	for _, h := range "0123456789abcde" {
		terms = append(terms, "w0"+string(h)+"*")
	}
	text := s.fails("get_resume_context", map[string]any{"max_events": 1, "query": strings.Join(terms, " ")}, "TIMEOUT")
	if !strings.Contains(text, "fewer or longer prefix terms") || !strings.Contains(text, "--query-timeout") {
		t.Fatalf("the timeout gives no hint: %q", text)
	}
	s.audited(db) // the row is written after the reply
	if tool, ok, errText := lastAudit(t, db); tool != "get_resume_context" || ok || !strings.HasPrefix(errText, "TIMEOUT") {
		t.Fatalf("audit row: %s %v %q", tool, ok, errText)
	}
	// A word too many is INVALID_ARGUMENT, before any work.
	text = s.fails("get_resume_context", map[string]any{"query": strings.Join(append(terms, "y"), " ")}, "INVALID_ARGUMENT")
	if !strings.Contains(text, "at most 32 words") {
		t.Fatalf("too many words: %q", text)
	}
	// Any byte gives a match or INVALID_ARGUMENT, never a database error.
	s2 := start(t, newDB(t))
	s2.ok("append_event", map[string]any{"content": "alpha\x00beta"})
	s2.ok("append_event", map[string]any{"content": "newest"})
	for _, query := range []string{"alpha\x00", "\"alpha\x00beta", "\x00", "a\x01\x02\x7f*", "\"\"\"*", "NEAR(alpha", "alpha:beta ^x"} {
		text, isErr := s2.call("get_resume_context", map[string]any{"max_events": 1, "query": query})
		if isErr && !strings.HasPrefix(text, "INVALID_ARGUMENT: ") {
			t.Errorf("query %q: %q", query, text)
		}
		if !isErr && !strings.Contains(text, "# recall: ") {
			t.Errorf("query %q: no recall section: %q", query, text)
		}
	}
	if text := s2.ok("get_resume_context", map[string]any{"max_events": 1, "query": "alpha\x00"}); !strings.Contains(text, "# recall: 1 older events match") {
		t.Errorf("a NUL-ended word finds its event: %q", text)
	}
}

// TestStartRefusesForeignTriggersOverStdio: a server does not serve a file
// in which a trigger it did not create runs inside its writes; it exits
// naming the trigger and the fix, and serves again once it is dropped.
// The reference server's file still opens (TestReference030* and others).
func TestStartRefusesForeignTriggersOverStdio(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	s := start(t, db)
	s.ok("append_event", map[string]any{"content": "first"})
	s.ok("write_query", q(`CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT)`))
	s.c.Close()
	direct := openDirect(t, db)
	for _, ddl := range []string{
		`CREATE TRIGGER drop_secret BEFORE INSERT ON memory_events WHEN NEW.content LIKE '%secret%' BEGIN SELECT RAISE(IGNORE); END`,
		`CREATE TRIGGER relink AFTER INSERT ON notes BEGIN INSERT OR REPLACE INTO memory_events (id, ts, session, kind, content, prev_hash, hash) VALUES (1, 't', 's', 'k', NEW.body, 'p', 'h'); END`,
		`CREATE VIEW recent AS SELECT * FROM memory_events ORDER BY id DESC LIMIT 5`, // reading is allowed
	} {
		if _, err := direct.Exec(ddl); err != nil {
			t.Fatal(err)
		}
	}
	direct.Close()
	out, errOut, code := runCLI(t, nil, "--db", db)
	if code == 0 || out != "" {
		t.Fatalf("the server served a file with foreign triggers: %d %q %q", code, out, errOut)
	}
	for _, want := range []string{`trigger "drop_secret": `, "runs on writes to memory_events", `trigger "relink": inserts into memory_events`, `DROP TRIGGER "drop_secret"; DROP TRIGGER "relink";`, "restore"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("the refusal lacks %q:\n%s", want, errOut)
		}
	}
	if strings.Contains(errOut, `"recent"`) {
		t.Errorf("a view that reads the memory is refused:\n%s", errOut)
	}
	direct = openDirect(t, db)
	if _, err := direct.Exec(`DROP TRIGGER drop_secret; DROP TRIGGER relink`); err != nil {
		t.Fatal(err)
	}
	direct.Close()
	s = start(t, db)
	if text := s.ok("append_event", map[string]any{"content": "the secret plan"}); !strings.HasPrefix(text, "ok: event 2 appended") {
		t.Fatalf("after the drop: %q", text)
	}
}
