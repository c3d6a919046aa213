package memory

import (
	"context"
	"database/sql"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// matchIDs runs a MATCH against the events index and returns the ids in
// rank order (bm25, newest first on ties).
func matchIDs(t *testing.T, db *sql.DB, query string, args ...any) []int64 {
	t.Helper()
	rows, err := db.Query(query, args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ids
}

const rankedSQL = `SELECT e.id FROM memory_events_fts f JOIN memory_events e ON e.id = f.rowid
WHERE memory_events_fts MATCH ? ORDER BY bm25(memory_events_fts), e.id DESC`

// appendLikeReference appends one event the way the reference server does,
// on a connection of its own that knows nothing of the index: BEGIN
// IMMEDIATE, read the head, insert the hashed row, commit.
func appendLikeReference(t *testing.T, db *sql.DB, ts, session, kind, content string) int64 {
	t.Helper()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var id int64
	prev := GenesisHash
	err = tx.QueryRow(`SELECT id, hash FROM memory_events ORDER BY id DESC LIMIT 1`).Scan(&id, &prev)
	if err != nil && err != sql.ErrNoRows {
		t.Fatal(err)
	}
	id++
	if _, err := tx.Exec(`INSERT INTO memory_events (id, ts, session, kind, content, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		id, ts, session, kind, content, prev, Hash(id, ts, session, kind, content, prev)); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return id
}

func TestIndexWrittenWithAppend(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	s := openStore(t, path)
	for _, c := range []struct{ kind, content string }{
		{"decision", "use WAL mode for the memory_events table"},
		{"note", "the café opens at nine"},
		{"finding", "max_update_rows guards bulk UPDATEs"},
	} {
		if _, err := s.Append(ctx, "s", c.kind, c.content); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Checkpoint(ctx, "s", "the chain is in WAL mode; next: recall"); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	for _, c := range []struct {
		query string
		want  []int64
	}{
		{"wal", []int64{1}},
		{"cafe", []int64{2}},                 // remove_diacritics 2
		{"CAFÉ", []int64{2}},                 // case folding
		{"max_update_rows", []int64{3}},      // '_' is a token character
		{"max", nil},                         // ... so a part of an identifier is not a token
		{"max*", []int64{3}},                 // a prefix query finds it
		{"memory_events", []int64{1}},        // identifiers as words
		{`"bulk updates"`, []int64{3}},       // a phrase
		{`"updates bulk"`, nil},              // the phrase's order matters
		{"kind:decision", []int64{1}},        // a column filter on kind
		{"wal OR cafe", []int64{2, 1}},       // equal scores: newest first
		{"NEAR(guards bulk, 1)", []int64{3}}, // NEAR
	} {
		t.Run(c.query, func(t *testing.T) {
			if got := matchIDs(t, db, rankedSQL, c.query); !slices.Equal(got, c.want) {
				t.Fatalf("MATCH %q = %v, want %v", c.query, got, c.want)
			}
		})
	}
	if got := matchIDs(t, db, `SELECT rowid FROM memory_checkpoints_fts WHERE memory_checkpoints_fts MATCH 'recall'`); !slices.Equal(got, []int64{1}) {
		t.Fatalf("checkpoint index = %v", got)
	}
	var snip string
	if err := db.QueryRow(`SELECT snippet(memory_events_fts, 0, '[', ']', '...', 4) FROM memory_events_fts WHERE memory_events_fts MATCH 'wal'`).Scan(&snip); err != nil || !strings.Contains(snip, "[WAL]") {
		t.Fatalf("snippet = %q, %v", snip, err)
	}
	// The index is FTS5's own view of it: consistent with the content.
	mustExec(t, db, `INSERT INTO memory_events_fts(memory_events_fts, rank) VALUES('integrity-check', 1)`)
	if v, err := s.Verify(ctx); err != nil || !v.OK || v.Events != 3 {
		t.Fatalf("verify = %+v, %v", v, err)
	}
}

func TestIndexRanking(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	s := openStore(t, path)
	// An old event that is about the query, then many recent ones that
	// mention one of its words in passing.
	if _, err := s.Append(ctx, "s", "decision", "login bug: the session cookie expired early; fixed the login cookie max-age"); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		if _, err := s.Append(ctx, "s", "note", "refactored the build scripts, step "+strings.Repeat("x", i%5+1)+" of the cookie-free build"); err != nil {
			t.Fatal(err)
		}
	}
	got := matchIDs(t, rawDB(t, path), rankedSQL+` LIMIT 3`, "login OR cookie")
	if len(got) == 0 || got[0] != 1 {
		t.Fatalf("ranked = %v, want event 1 first", got)
	}
}

func TestIndexCatchesUp(t *testing.T) {
	ctx := context.Background()
	path := copyReference(t) // 8 events, 1 checkpoint, made by the reference
	s := openStore(t, path)
	db := rawDB(t, path)
	if got := matchIDs(t, db, `SELECT id FROM memory_events_fts_docsize ORDER BY id`); len(got) != 8 {
		t.Fatalf("first start indexed %v, want the reference's 8 events", got)
	}

	// Another program appends, knowing nothing of the index: the insert
	// works (no trigger on memory_events), and the index lags.
	id := appendLikeReference(t, db, "2026-02-01T10:00:00Z", "20260201T100000Z-cafe", "finding", "the zeppelin report arrived")
	if got := matchIDs(t, db, rankedSQL, "zeppelin"); len(got) != 0 {
		t.Fatalf("index has %v before catching up (the test would not show the catch-up)", got)
	}
	// The next append of the running server indexes the gap with its own.
	e, err := s.Append(ctx, "s", "note", "a zeppelin again")
	if err != nil {
		t.Fatal(err)
	}
	if got := matchIDs(t, db, rankedSQL, "zeppelin"); !slices.Equal(got, []int64{id, e.ID}) && !slices.Equal(got, []int64{e.ID, id}) {
		t.Fatalf("after append: %v, want %d and %d", got, id, e.ID)
	}

	// A start after another program's appends catches up before serving.
	id2 := appendLikeReference(t, db, "2026-02-01T11:00:00Z", "20260201T110000Z-cafe", "finding", "a quokka sighting")
	mustExec(t, db, `INSERT INTO memory_checkpoints (ts, session, summary, last_event_id, head_hash) SELECT '2026-02-01T11:00:01Z', 'x', 'quokka summary', id, hash FROM memory_events WHERE id = ?`, id2)
	s.Close()
	s2 := openStore(t, path)
	if got := matchIDs(t, db, rankedSQL, "quokka"); !slices.Equal(got, []int64{id2}) {
		t.Fatalf("after restart: %v, want [%d]", got, id2)
	}
	if got := matchIDs(t, db, `SELECT rowid FROM memory_checkpoints_fts WHERE memory_checkpoints_fts MATCH 'quokka'`); len(got) != 1 {
		t.Fatalf("checkpoint not indexed: %v", got)
	}
	if v, err := s2.Verify(ctx); err != nil || !v.OK || v.Events != id2 {
		t.Fatalf("verify = %+v, %v", v, err)
	}
	mustExec(t, db, `INSERT INTO memory_events_fts(memory_events_fts, rank) VALUES('integrity-check', 1)`)
}

// TestReferenceAppendsToIndexedFile appends with Python's sqlite3 and the
// reference's own hashing (json.dumps, compact, ensure_ascii=False) to a
// file the server has indexed: the reference knows nothing of the index
// and must go on appending; the server then indexes its rows.
func TestReferenceAppendsToIndexedFile(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found (.ci/run installs it)")
	}
	ctx := context.Background()
	path := copyReference(t)
	s := openStore(t, path)
	s.Close()
	script := `
import hashlib, json, sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
row = db.execute("SELECT id, hash FROM memory_events ORDER BY id DESC LIMIT 1").fetchone()
nid, prev = row[0] + 1, row[1]
ev = [nid, "2026-03-01T08:00:00Z", "20260301T080000Z-py00", "note", "narwhal seen from Python", prev]
h = hashlib.sha256(json.dumps(ev, separators=(",", ":"), ensure_ascii=False).encode("utf-8")).hexdigest()
db.execute("INSERT INTO memory_events (id, ts, session, kind, content, prev_hash, hash) VALUES (?,?,?,?,?,?,?)", ev + [h])
db.execute("COMMIT")
print(nid)
`
	out, err := exec.Command(python, "-c", script, path).CombinedOutput()
	if err != nil {
		t.Fatalf("the reference-style append failed on an indexed file: %v\n%s", err, out)
	}
	s2 := openStore(t, path)
	if got := matchIDs(t, rawDB(t, path), rankedSQL, "narwhal"); !slices.Equal(got, []int64{9}) {
		t.Fatalf("python's event not indexed: %v (python said %s)", got, out)
	}
	// The recall index too, stemmed: "narwhals" finds "narwhal".
	if got := matchIDs(t, rawDB(t, path), `SELECT rowid FROM memory_recall WHERE memory_recall MATCH 'narwhals'`); !slices.Equal(got, []int64{9}) {
		t.Fatalf("python's event not in the recall index: %v", got)
	}
	if v, err := s2.Verify(ctx); err != nil || !v.OK || v.Events != 9 {
		t.Fatalf("verify = %+v, %v", v, err)
	}
}

func TestIndexNoTriggers(t *testing.T) {
	// The index adds no trigger: other programs' INSERTs run as before.
	path := filepath.Join(t.TempDir(), "m.db")
	openStore(t, path)
	var n int
	if err := rawDB(t, path).QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND sql LIKE '%fts%'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d triggers mention the index, %v", n, err)
	}
}

// TestIndexCatchesUpInBackground: a backlog longer than backgroundFrom (a
// big file the reference wrote) is indexed in the background: Open returns
// first, appends leave the backlog to the catch-up instead of indexing it
// all in their own transaction, recall says the index is behind, and once
// the catch-up is done every row is ranked. Close stops a catch-up that
// runs.
func TestIndexCatchesUpInBackground(t *testing.T) {
	ctx := context.Background()
	path := copyReference(t) // 8 events, 1 checkpoint
	db := rawDB(t, path)
	// The reference's rows, many more of them: one transaction, hashed as
	// the reference hashes.
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	var head int64
	prev := GenesisHash
	if err := tx.QueryRow(`SELECT id, hash FROM memory_events ORDER BY id DESC LIMIT 1`).Scan(&head, &prev); err != nil {
		t.Fatal(err)
	}
	for range backgroundFrom + 2000 {
		head++
		ts, content := "2026-02-01T10:00:00Z", fmt.Sprintf("routine event %d", head)
		if head == 100 {
			content = "the zeppelin report arrived"
		}
		h := Hash(head, ts, "bulk", "note", content, prev)
		if _, err := tx.Exec(`INSERT INTO memory_events (id, ts, session, kind, content, prev_hash, hash) VALUES (?, ?, 'bulk', 'note', ?, ?, ?)`, head, ts, content, prev, h); err != nil {
			t.Fatal(err)
		}
		prev = h
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}

	release := make(chan struct{})
	held := make(chan struct{}, 4)
	catchUpHook = func(ctx context.Context) {
		held <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
	}
	defer func() { catchUpHook = func(context.Context) {} }()

	s := openStore(t, path)
	<-held
	if !s.catchingUp() {
		t.Fatal("Open did not leave the long backlog to the background")
	}
	indexed := func() int64 {
		t.Helper()
		var n int64
		if err := db.QueryRow(`SELECT coalesce(max(id), 0) FROM memory_events_fts_docsize`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := indexed(); n >= head {
		t.Fatalf("index at %d of %d before the catch-up ran", n, head)
	}
	e, err := s.Append(ctx, "s", "note", "a quokka sighting")
	if err != nil {
		t.Fatal(err)
	}
	if n := indexed(); n >= head {
		t.Fatalf("the append indexed the backlog in its own transaction (index at %d)", n)
	}
	r, err := s.ResumeContext(ctx, ResumeOptions{MaxEvents: 5, Query: "zeppelin"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.Text, "catching up in the background (") || r.IndexLag <= 0 {
		t.Fatalf("recall while catching up (lag %d):\n%s", r.IndexLag, r.Text)
	}

	close(release)
	for deadline := time.Now().Add(60 * time.Second); s.catchingUp(); {
		if time.Now().After(deadline) {
			t.Fatal("the background catch-up did not finish within 60 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := indexed(); n != e.ID {
		t.Fatalf("index at %d after the catch-up, want %d", n, e.ID)
	}
	if got := matchIDs(t, db, rankedSQL, "zeppelin"); !slices.Equal(got, []int64{100}) {
		t.Fatalf("zeppelin: %v", got)
	}
	if got := matchIDs(t, db, rankedSQL, "quokka"); !slices.Equal(got, []int64{e.ID}) {
		t.Fatalf("quokka: %v", got)
	}
	r, err = s.ResumeContext(ctx, ResumeOptions{MaxEvents: 5, Query: "zeppelin"})
	if err != nil || strings.Contains(r.Text, "catching up") || r.Recalled != 1 {
		t.Fatalf("recall after the catch-up (%v):\n%s", err, r.Text)
	}
	mustExec(t, db, `INSERT INTO memory_events_fts(memory_events_fts, rank) VALUES('integrity-check', 1)`)
	if v, err := s.Verify(ctx); err != nil || !v.OK || v.Events != e.ID {
		t.Fatalf("verify = %+v, %v", v, err)
	}
	s.Close()

	// A store closed while its catch-up is held stops it and returns.
	mustExec(t, db, `INSERT INTO memory_events_fts(memory_events_fts) VALUES('delete-all')`)
	s2 := openStore(t, path)
	<-held
	if !s2.catchingUp() {
		t.Fatal("no background catch-up after the index was emptied")
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	if s2.catchingUp() {
		t.Fatal("the catch-up runs after Close")
	}
}
