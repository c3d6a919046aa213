package tests

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/embed"
)

// tinyModelDir writes a Model2Vec-format model of a few words in which
// "database", "storage" and "postgres" point one way, "login" and
// "session" another.
func tinyModelDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(testDir(t), "model")
	words := []string{"[UNK]", "database", "storage", "postgres", "login", "session"}
	vecs := [][]float32{{0, 0}, {1, 0.1}, {0.9, 0.2}, {0.95, 0.1}, {0.1, 1}, {0.2, 0.9}}
	if err := embed.Write(dir, words, vecs, false); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestRecallWithEmbeddingModel (issue 47 step 4): with --embedding-model
// the server stores a vector beside each event (the reference's rows get
// theirs at start), recall and get_resume_context's recall section say
// they re-ranked with them, and the vector table is a server object agents
// cannot write.
func TestRecallWithEmbeddingModel(t *testing.T) {
	t.Parallel()
	model := tinyModelDir(t)
	db := referenceDB(t) // events 1..8, written by the reference
	referenceAppend(t, db, "2026-03-01T08:00:00Z", "decision", "the database is SQLite, postgres was dropped")
	s := start(t, db, "--embedding-model", model)
	s.ok("append_event", map[string]any{"kind": "note", "content": "login session storage expires after a day"})
	direct := openDirect(t, db)
	var rows, events int
	if err := direct.QueryRow(`SELECT (SELECT count(*) FROM memory_vectors WHERE id > 0), (SELECT count(*) FROM memory_events)`).Scan(&rows, &events); err != nil {
		t.Fatal(err)
	}
	if rows != events || events != 10 {
		t.Fatalf("%d vector rows for %d events", rows, events)
	}
	text := s.ok("recall", map[string]any{"query": "database storage"})
	if ids := recallIDs(t, text); len(ids) == 0 {
		t.Fatalf("no match:\n%s", text)
	}
	if !strings.Contains(text, "re-ranked with their embedding vectors") {
		t.Fatalf("the trailer does not say vectors took part:\n%s", text)
	}
	// get_resume_context's recall section is ranked the same way.
	resume := s.ok("get_resume_context", map[string]any{"query": "database storage", "max_events": 1})
	if _, section, _ := strings.Cut(resume, "\n# recall: "); !strings.Contains(section, "re-ranked with their embedding vectors") || !strings.Contains(section, "\n9,") {
		t.Fatalf("the resume's recall section does not say vectors took part, or misses event 9:\n%s", resume)
	}
	s.fails("write_query", q(`DELETE FROM memory_vectors`), "PROTECTED_TABLE")
	s.fails("write_query", q(`INSERT INTO memory_vectors (id, model, vector) VALUES (99, 'x', x'')`), "PROTECTED_TABLE")
	if tables := s.ok("list_tables", nil); strings.Contains(tables, "memory_vectors") {
		t.Fatalf("list_tables shows the vector table:\n%s", tables)
	}
	if v := s.verify(); !v.OK || v.Events != 10 {
		t.Fatalf("verify: %+v", v)
	}
	s.c.Close()

	// Without the model: the word ranking, as before.
	s = start(t, db)
	if text := s.ok("recall", map[string]any{"query": "database storage"}); strings.Contains(text, "vectors") {
		t.Fatalf("without --embedding-model the trailer speaks of vectors:\n%s", text)
	}
	if text := s.ok("get_resume_context", map[string]any{"query": "database storage", "max_events": 1}); strings.Contains(text, "vectors") || !strings.Contains(text, "| ranked by bm25, ties newest first;") {
		t.Fatalf("without --embedding-model the resume's recall section speaks of vectors:\n%s", text)
	}
}

// TestEmbeddingModelRefusedAtStart: a missing or malformed model directory
// stops the server before it serves, with a message naming the file.
func TestEmbeddingModelRefusedAtStart(t *testing.T) {
	t.Parallel()
	broken := tinyModelDir(t)
	if err := os.WriteFile(filepath.Join(broken, embed.TokenizerFile), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, dir, want string
	}{
		{"missing", filepath.Join(testDir(t), "nowhere"), "nowhere"},
		{"malformed", broken, embed.TokenizerFile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := newDB(t)
			cmd := exec.Command(serverBin, "--db", db, "--embedding-model", tc.dir)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			cmd.Stdin = strings.NewReader("") // a server that started would serve stdio until EOF
			err := cmd.Run()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() == 0 {
				t.Fatalf("the server started (%v): %s", err, stderr.String())
			}
			if msg := stderr.String(); !strings.Contains(msg, tc.want) || !strings.Contains(msg, "--embedding-model") || !strings.Contains(msg, "nothing is downloaded") {
				t.Fatalf("exit %d, message without %q: %s", ee.ExitCode(), tc.want, msg)
			}
			if _, err := os.Stat(db); err == nil {
				t.Fatal("the refused start created the database")
			}
		})
	}
}
