package tests

import (
	"crypto/sha256"
	"database/sql"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// csvRows parses a read_query answer (CSV plus the "# N rows" trailer).
func csvRows(t *testing.T, text string) [][]string {
	t.Helper()
	body := text[:strings.LastIndex(text, "\n# ")+1]
	recs, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatalf("CSV %q: %v", text, err)
	}
	return recs
}

func column(recs [][]string, i int) []string {
	var out []string
	for _, r := range recs[1:] {
		out = append(out, r[i])
	}
	return out
}

// referenceAppend appends one event as the reference server does, on a
// connection of its own that knows nothing of the index: the canonical
// form (SPEC 5.1) built by hand for plain ASCII text, hashed.
func referenceAppend(t *testing.T, path, ts, kind, content string) {
	t.Helper()
	referenceAppendMany(t, path, 1, ts, kind, func(int64) string { return content })
}

// referenceAppendMany is referenceAppend of n events in one transaction,
// the content of event id given by content.
func referenceAppendMany(t *testing.T, path string, n int, ts, kind string, content func(id int64) string) {
	t.Helper()
	// BEGIN IMMEDIATE, as the reference appends: a deferred transaction
	// that read the head before a running server wrote would fail its
	// insert with SQLITE_BUSY_SNAPSHOT, which no busy timeout waits out.
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var id int64
	var prev string
	if err := tx.QueryRow(`SELECT id, hash FROM memory_events ORDER BY id DESC LIMIT 1`).Scan(&id, &prev); err != nil {
		t.Fatal(err)
	}
	const session = "20260301T080000Z-ref0"
	for range n {
		id++
		text := content(id)
		canon, _ := json.Marshal([]any{id, ts, session, kind, text, prev}) // ASCII without <>&: json.Marshal's form is the canonical one
		sum := sha256.Sum256(canon)
		hash := hex.EncodeToString(sum[:])
		if _, err := tx.Exec(`INSERT INTO memory_events (id, ts, session, kind, content, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			id, ts, session, kind, text, prev, hash); err != nil {
			t.Fatal(err)
		}
		prev = hash
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

const rankedRecall = `SELECT e.id, e.kind, snippet(memory_events_fts, 0, '[', ']', '...', 6) AS hit
FROM memory_events_fts JOIN memory_events e ON e.id = memory_events_fts.rowid
WHERE memory_events_fts MATCH %s`

// ranked is the recall query for match, with where added to its WHERE
// and tail (LIMIT ...) after its ORDER BY.
func ranked(match, where string, tail ...string) string {
	return strings.Replace(rankedRecall, "%s", "'"+strings.ReplaceAll(match, "'", "''")+"'", 1) + where +
		" ORDER BY bm25(memory_events_fts), e.id DESC" + strings.Join(tail, "")
}

func TestRecallOverStdio(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	s := start(t, db)
	events := []struct{ kind, content string }{
		{"decision", "login bug: the session cookie expired after 5 minutes; set the cookie max-age to one day"}, // 1
		{"finding", "max_update_rows guards bulk UPDATEs in write_query"},                                        // 2
		{"note", "the café on the corner has wifi"},                                                              // 3
		{"decision", "we ship with WAL mode on"},                                                                 // 4
	}
	for _, e := range events {
		s.ok("append_event", map[string]any{"kind": e.kind, "content": e.content})
	}
	s.ok("checkpoint", map[string]any{"summary": "auth fixed; WAL on"})
	for range 5 {
		s.ok("append_event", map[string]any{"content": "ran the build again; a cookie-free build"}) // 5..9
	}

	// Ranking through SQL: the old event about the login cookie beats the
	// recent ones that mention a cookie in passing.
	recs := csvRows(t, s.ok("read_query", q(ranked("login OR cookie", "", " LIMIT 3"))))
	if ids := column(recs, 0); len(ids) != 3 || ids[0] != "1" {
		t.Fatalf("ranked: %q", recs)
	}
	if !strings.Contains(recs[1][2], "[login]") || !strings.Contains(recs[1][2], "[cookie]") {
		t.Fatalf("snippet: %q", recs[1][2])
	}
	// Filters by kind (a join, or FTS5's column filter) and time.
	for _, c := range []struct{ sql, want string }{
		{ranked("cookie", " AND e.kind = 'decision'"), "1"},
		{ranked("cookie AND kind:decision", ""), "1"},
		{ranked("cookie", " AND e.ts >= (SELECT ts FROM memory_events WHERE id = 5) AND e.id >= 5", " LIMIT 1"), "9"},
		{ranked("max*", ""), "2"},            // prefix
		{ranked(`"bulk updates"`, ""), "2"},  // phrase
		{ranked(`"updates bulk"`, ""), ""},   // order matters in a phrase
		{ranked("max_update_rows", ""), "2"}, // an identifier is one token
		{ranked("cafe", ""), "3"},            // diacritics removed
		{ranked(`"max-age"`, ""), "1"},       // punctuation inside a quoted phrase
		{`SELECT highlight(memory_events_fts, 0, '<', '>') FROM memory_events_fts WHERE memory_events_fts MATCH 'wal'`, "we ship with <WAL> mode on"},
		{`SELECT rowid FROM memory_checkpoints_fts WHERE memory_checkpoints_fts MATCH 'auth'`, "1"},
	} {
		recs := csvRows(t, s.ok("read_query", q(c.sql)))
		got := ""
		if len(recs) > 1 {
			got = recs[1][0]
		}
		if got != c.want {
			t.Fatalf("%s: got %q, want %q (%q)", c.sql, got, c.want, recs)
		}
	}

	// A malformed MATCH is an SQL_ERROR that says how to write one.
	for _, bad := range []string{"login (", "max-age"} {
		text := s.fails("read_query", q(ranked(bad, "")), "SQL_ERROR")
		if !strings.Contains(text, "FTS5 query syntax") || !strings.Contains(text, `"max-events"`) {
			t.Fatalf("no hint: %q", text)
		}
	}

	// get_resume_context without a query: as before, no recall section.
	plain := s.ok("get_resume_context", map[string]any{"max_events": 2})
	if strings.Contains(plain, "# recall:") || !strings.Contains(plain, "# 5 events since checkpoint, showing the most recent 2 | chain ok (9 events)") {
		t.Fatalf("plain resume:\n%s", plain)
	}
	// With a query: the recent ones, then the relevant older ones ranked.
	withQuery := s.ok("get_resume_context", map[string]any{"max_events": 2, "query": "login cookie"})
	if !strings.HasPrefix(withQuery, plain+"\n\n# recall: ") {
		t.Fatalf("the recent part changed, or no recall section after it:\n%s", withQuery)
	}
	section := withQuery[len(plain)+2:]
	head, body, _ := strings.Cut(section, "\n")
	rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	// Events 8 and 9 are shown as recent and not repeated; 1 comes first,
	// then the newest of the equal ones; max_events caps the section too.
	if strings.Join(rows[0], ",") != "id,ts,kind,content,score" || len(rows) != 3 || rows[1][0] != "1" || rows[2][0] != "7" {
		t.Fatalf("recall section:\n%s", section)
	}
	if head != "# recall: 4 older events match the query, showing the best 2 | ranked by bm25, ties newest first; score: higher is more relevant" {
		t.Fatalf("recall head %q", head)
	}
	s.fails("get_resume_context", map[string]any{"query": "  --  "}, "INVALID_ARGUMENT")
	s.fails("get_resume_context", map[string]any{"query": 7}, "INVALID_ARGUMENT")

	// A server object: hidden by list_tables, counted as hidden by
	// get_schema, shown with include_system; verify_chain ignores it.
	if tables := s.ok("list_tables", nil); strings.Contains(tables, "_fts") || strings.Contains(tables, "memory_recall") {
		t.Fatalf("list_tables shows the index:\n%s", tables)
	}
	schema := s.ok("get_schema", nil)
	if strings.Contains(schema, "_fts") || strings.Contains(schema, "memory_recall") || !strings.HasPrefix(schema, "-- 0 objects (26 server objects hidden; include_system=true shows them)") {
		t.Fatalf("get_schema:\n%s", schema)
	}
	if all := s.ok("get_schema", map[string]any{"include_system": true}); !strings.Contains(all, "CREATE VIRTUAL TABLE memory_events_fts USING fts5(content, kind, content='memory_events', content_rowid='id', tokenize=\"unicode61 remove_diacritics 2 tokenchars '_'\");") {
		t.Fatalf("include_system lacks the index:\n%s", all)
	}
	if v := s.verify(); !v.OK || v.Events != 9 {
		t.Fatalf("verify: %+v", v)
	}
}

// TestRecallIndexRefusedInEveryTool: no tool writes the index, FTS
// commands that lose nothing included.
func TestRecallIndexRefusedInEveryTool(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	s := start(t, db)
	s.ok("append_event", map[string]any{"content": "indexed words"})
	before := dump(t, db, "memory_events_fts_data", "memory_events_fts_idx", "memory_events_fts_docsize", "memory_events_fts_config")
	statements := []string{
		`INSERT INTO memory_events_fts(memory_events_fts) VALUES('rebuild')`,
		`INSERT INTO memory_events_fts(memory_events_fts) VALUES('optimize')`,
		`INSERT INTO memory_events_fts(memory_events_fts) VALUES('delete-all')`,
		`INSERT INTO memory_events_fts(memory_events_fts, rank) VALUES('merge', 100)`,
		`INSERT INTO memory_events_fts(memory_events_fts, rank) VALUES('integrity-check', 1)`,
		`INSERT INTO memory_events_fts(memory_events_fts, rowid, content, kind) VALUES('delete', 1, 'indexed words', 'note')`,
		`INSERT INTO memory_events_fts(rowid, content, kind) VALUES(99, 'planted', 'note')`,
		`INSERT INTO memory_checkpoints_fts(memory_checkpoints_fts) VALUES('rebuild')`,
		`DELETE FROM memory_events_fts`,
		`DROP TABLE memory_events_fts`,
		`INSERT INTO memory_events_fts_data VALUES (99, x'00')`,
		`DROP TABLE memory_events_fts_idx`,
		// The recall index (contentless, issue 47) likewise.
		`INSERT INTO memory_recall(memory_recall) VALUES('optimize')`,
		`INSERT INTO memory_recall(memory_recall, rank) VALUES('integrity-check', 0)`,
		`INSERT INTO memory_recall(rowid, body, kind) VALUES(99, 'planted', 'note')`,
		`DELETE FROM memory_recall WHERE rowid = 1`,
		`DROP TABLE memory_recall`,
		`DROP TABLE memory_recall_docsize`,
	}
	for _, sql := range statements {
		for _, tool := range []string{"write_query", "destructive_query"} {
			args := q(sql)
			args["reason"] = "test"
			if tool == "write_query" {
				delete(args, "reason")
			}
			text := s.fails(tool, args, "PROTECTED_TABLE")
			if !strings.Contains(text, "full-text index") {
				t.Fatalf("%s %s: %q", tool, sql, text)
			}
		}
		if text, isErr := s.call("read_query", q(sql)); !isErr || !strings.HasPrefix(text, "PROTECTED_TABLE: ") && !strings.HasPrefix(text, "READ_ONLY_VIOLATION: ") {
			t.Fatalf("read_query %s: %q", sql, text)
		}
	}
	s.fails("create_view", map[string]any{"name": "v", "select_sql": statements[0]}, "PROTECTED_TABLE")
	// Shadow-table writes that SQLite's defensive mode refuses itself.
	s.fails("destructive_query", map[string]any{"query": `DELETE FROM memory_events_fts_docsize`, "reason": "test"}, "SQL_ERROR")
	s.fails("destructive_query", map[string]any{"query": `DELETE FROM memory_recall_docsize`, "reason": "test"}, "SQL_ERROR")
	if after := dump(t, db, "memory_events_fts_data", "memory_events_fts_idx", "memory_events_fts_docsize", "memory_events_fts_config"); after != before {
		t.Fatal("the index changed")
	}
	// The readonly profile, on the same file.
	r := start(t, db, "--profile", "readonly")
	if text, isErr := r.call("query_database", map[string]any{"sql": statements[0]}); !isErr || !strings.Contains(text, "READ_ONLY_VIOLATION") {
		t.Fatalf("readonly: %q", text)
	}
	if text := r.ok("query_database", map[string]any{"sql": `SELECT rowid FROM memory_events_fts WHERE memory_events_fts MATCH 'indexed'`}); !strings.Contains(text, `"rows":[[1]]`) {
		t.Fatalf("readonly MATCH: %s", text)
	}
}

// TestRecallCatchesUp: rows another program appended (with the reference's
// hashing, knowing nothing of the index) are found after a restart, and by
// a running server's recall.
func TestRecallCatchesUp(t *testing.T) {
	t.Parallel()
	db := referenceDB(t)
	s := start(t, db)
	s.ok("verify_chain", nil)
	s.c.Close()

	referenceAppend(t, db, "2026-03-01T08:00:00Z", "finding", "a zeppelin over the harbour")
	s = start(t, db)
	if recs := csvRows(t, s.ok("read_query", q(ranked("zeppelin", "")))); len(recs) != 2 || recs[1][0] != "9" {
		t.Fatalf("after restart: %q", recs)
	}
	// While it runs: recall indexes what it lacks first.
	referenceAppend(t, db, "2026-03-01T08:01:00Z", "finding", "a quokka on the quay")
	referenceAppend(t, db, "2026-03-01T08:02:00Z", "note", "lunch")
	text := s.ok("get_resume_context", map[string]any{"max_events": 1, "query": "quokka"})
	if !strings.Contains(text, "\n10,2026-03-01T08:01:00Z,finding,a quokka on the quay,") {
		t.Fatalf("running recall missed the new row:\n%s", text)
	}
	if v := s.verify(); !v.OK || v.Events != 11 {
		t.Fatalf("verify: %+v", v)
	}
}

// TestRecallIndexUpgradedAtStart: a file whose recall index an earlier
// version wrote (no pairs column) gets it built again at start, so that
// an identifier finds the prose that spells it (cache_key: "cache key").
func TestRecallIndexUpgradedAtStart(t *testing.T) {
	t.Parallel()
	db := referenceDB(t)                                                                           // events 1..8
	referenceAppend(t, db, "2026-03-01T08:00:00Z", "note", "the HTTP cache key is the account id") // 9
	direct := openDirect(t, db)
	if _, err := direct.Exec(`CREATE VIRTUAL TABLE memory_recall USING fts5(body, kind, content='', tokenize="porter unicode61 remove_diacritics 2 tokenchars '_'")`); err != nil {
		t.Fatal(err)
	}
	if _, err := direct.Exec(`INSERT INTO memory_recall(rowid, body, kind) SELECT id, content, kind FROM memory_events`); err != nil {
		t.Fatal(err)
	}
	s := start(t, db)
	if ids := recallIDs(t, s.ok("recall", map[string]any{"query": "cache_key"})); len(ids) != 1 || ids[0] != "9" {
		t.Fatalf("recall cache_key after the upgrade: %v, want 9", ids)
	}
	var pairs int
	if err := direct.QueryRow(`SELECT count(*) FROM pragma_table_xinfo('memory_recall') WHERE name = 'pairs'`).Scan(&pairs); err != nil || pairs != 1 {
		t.Fatalf("the recall index has %d pairs columns (%v), want 1", pairs, err)
	}
	if v := s.verify(); !v.OK || v.Events != 9 {
		t.Fatalf("verify: %+v", v)
	}
}

// TestRecallCatchesUpInBackground: a file with a long backlog the index
// lacks (20,000 events another program wrote) gets a server that answers
// at once and indexes the backlog in the background, says so in its log,
// takes appends meanwhile, and recalls the old rows once it is done.
func TestRecallCatchesUpInBackground(t *testing.T) {
	t.Parallel()
	db := referenceDB(t)
	referenceAppendMany(t, db, 20000, "2026-03-01T08:00:00Z", "note", func(id int64) string {
		if id == 500 {
			return "a zeppelin over the harbour"
		}
		return fmt.Sprintf("routine entry %d", id)
	})
	s, logs := startLogged(t, serverBin, db)
	if v := s.verify(); !v.OK || v.Events != 20008 {
		t.Fatalf("verify: %+v", v)
	}
	if got := s.ok("append_event", map[string]any{"kind": "note", "content": "a quokka on the quay"}); !strings.HasPrefix(got, "ok: event 20009 appended") {
		t.Fatalf("append: %q", got)
	}
	var text string
	// Until the catch-up is done, a recall may say the index is behind.
	if !waitFor(60*time.Second, func() bool {
		text = s.ok("get_resume_context", map[string]any{"max_events": 1, "query": "zeppelin"})
		return strings.Contains(text, "\n500,2026-03-01T08:00:00Z,note,a zeppelin over the harbour,") && !strings.Contains(text, "catching up")
	}) {
		t.Fatalf("60 s on, the recall has not found the backlog's event from an index that is up to date:\n%s", text)
	}
	if !strings.Contains(logs.String(), "in the background") {
		t.Fatalf("the log does not say the backlog is indexed in the background:\n%s", logs)
	}
	if recs := csvRows(t, s.ok("read_query", q(ranked("quokka", "")))); len(recs) != 2 || recs[1][0] != "20009" {
		t.Fatalf("quokka: %q", recs)
	}
}

// recallIDs are the id column of a recall tool answer, best first.
func recallIDs(t *testing.T, text string) []string {
	t.Helper()
	if !strings.HasPrefix(text, "id,ts,kind,agent,score,snippet\n") {
		t.Fatalf("recall answer without its header:\n%s", text)
	}
	return column(csvRows(t, text), 0)
}

// TestRecallToolOverStdio: the recall tool (issue 47) ranks events and
// checkpoints by stemmed words and identifier parts, narrows by time and
// kind, says how it ranked, refuses bad arguments with INVALID_ARGUMENT,
// and get_resume_context(query=...) takes the same filters. The events
// appended before the start come from another program (the reference's
// way), at fixed times: the server indexes them at start.
func TestRecallToolOverStdio(t *testing.T) {
	t.Parallel()
	db := referenceDB(t)                                                                                        // events 1..8, written by the reference
	referenceAppend(t, db, "2026-01-12T11:00:00Z", "bug", "parseConfig panicked on an empty ledger.toml")       // 9
	referenceAppend(t, db, "2026-01-20T15:00:00Z", "note", "the HTTP cache key is the account id and transfer") // 10
	referenceAppend(t, db, "2026-02-03T13:30:00Z", "decision", "Releases follow semantic versioning")           // 11
	s := start(t, db)
	s.ok("checkpoint", map[string]any{"summary": "the config loader is fixed; releases are versioned"})

	text := s.ok("recall", map[string]any{"query": "parse config"})
	if ids := recallIDs(t, text); len(ids) == 0 || ids[0] != "9" {
		t.Fatalf("parse config did not find parseConfig first:\n%s", text)
	}
	if !strings.Contains(text, "\n9,2026-01-12T11:00:00Z,bug,,") || !strings.Contains(text, "parseConfig panicked") {
		t.Fatalf("row 9:\n%s", text)
	}
	if trailer := text[strings.LastIndex(text, "\n")+1:]; !strings.HasPrefix(trailer, "# ") || !strings.Contains(trailer, "ranked by bm25 over stemmed words and identifier parts") {
		t.Fatalf("trailer %q", trailer)
	}
	// Stems, identifier forms and checkpoints.
	for query, want := range map[string]string{"cache_key": "10", "versions": "11", "loaders": "c2"} {
		if ids := recallIDs(t, s.ok("recall", map[string]any{"query": query})); len(ids) == 0 || ids[0] != want {
			t.Errorf("recall %q: %v, want %s first", query, ids, want)
		}
	}
	// Filters: time (dates include their day), kinds, limit.
	filters := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"query": "config releases cache", "until": "2026-01-12"}, "9"},
		{map[string]any{"query": "config releases cache", "since": "2026-01-13", "until": "2026-02-03T13:29:59Z"}, "10"},
		{map[string]any{"query": "config releases cache", "since": "2026-02-01", "kinds": "decision"}, "11"},
		{map[string]any{"query": "config releases cache", "kinds": []any{"checkpoint"}}, "c2"},
		{map[string]any{"query": "config releases cache", "since": "1h"}, "c2"},
		{map[string]any{"query": "config releases cache", "until": "1h"}, "10 11 9"}, // sorted as text
		{map[string]any{"query": "parse config", "limit": 1}, "9"},
	}
	for _, f := range filters {
		text := s.ok("recall", f.args)
		ids := recallIDs(t, text)
		slices.Sort(ids)
		if strings.Join(ids, " ") != f.want {
			t.Errorf("recall %v: %v, want %s\n%s", f.args, ids, f.want, text)
		}
	}
	if text := s.ok("recall", map[string]any{"query": "parse config", "limit": 1}); !strings.Contains(text, "# 1 of 2 matches (raise limit to see more)") {
		t.Errorf("limit trailer:\n%s", text)
	}
	if text := s.ok("recall", map[string]any{"query": "zeppelin"}); text != "id,ts,kind,agent,score,snippet\n# 0 of 0 matches | ranked by bm25 over stemmed words and identifier parts (memory_recall), ties newest first; score: higher is more relevant" {
		t.Errorf("no match: %q", text)
	}
	for _, bad := range []map[string]any{
		{"query": ""}, {"query": "  --  "}, {"query": 7}, {"query": "x", "since": "yesterday"},
		{"query": "x", "until": "2026-13-01"}, {"query": "x", "since": "2026-02-01", "until": "2026-01-01"},
		{"query": "x", "limit": 0}, {"query": "x", "kinds": map[string]any{"a": 1}}, {"query": "x", "bogus": 1},
	} {
		s.fails("recall", bad, "INVALID_ARGUMENT")
	}
	s.audited(db)
	if tool, ok, _ := lastAudit(t, db); tool != "recall" || ok {
		t.Fatalf("last audit row: %s ok=%v", tool, ok)
	}

	// get_resume_context takes the same filters for its recall section.
	text = s.ok("get_resume_context", map[string]any{"max_events": 1, "query": "config releases cache", "kinds": "bug,note"})
	_, section, _ := strings.Cut(text, "\nid,ts,kind,content,score\n")
	if !strings.HasPrefix(section, "9,") && !strings.HasPrefix(section, "10,") || strings.Contains(section, "\n11,") {
		t.Fatalf("get_resume_context with kinds:\n%s", text)
	}
	text = s.ok("get_resume_context", map[string]any{"max_events": 1, "query": "config releases cache", "since": "2026-01-13", "until": "2026-01-31"})
	if _, section, _ = strings.Cut(text, "\nid,ts,kind,content,score\n"); !strings.HasPrefix(section, "10,") || strings.Contains(section, "\n9,") {
		t.Fatalf("get_resume_context with since and until:\n%s", text)
	}
	s.fails("get_resume_context", map[string]any{"since": "7d"}, "INVALID_ARGUMENT")
	s.fails("get_resume_context", map[string]any{"query": "x", "until": "soon"}, "INVALID_ARGUMENT")
	if v := s.verify(); !v.OK || v.Events != 11 {
		t.Fatalf("verify: %+v", v)
	}
}

// TestRecallToolAgentsOverHTTP: the agent filter keeps what one HTTP
// agent wrote, and the agent column names who wrote each row.
func TestRecallToolAgentsOverHTTP(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	h := startHTTP(t, db, []string{"alice", "bob"})
	alice, bob := h.connect(t, "alice", false), h.connect(t, "bob", true)
	alice.ok("append_event", map[string]any{"kind": "decision", "content": "alice: use SQLite for the ledger cache"})
	bob.ok("append_event", map[string]any{"kind": "decision", "content": "bob: the ledger cache expires after an hour"})
	text := bob.ok("recall", map[string]any{"query": "ledger cache"})
	if rows := csvRows(t, text); len(rows) != 3 || !slices.Contains(column(rows, 3), "alice") || !slices.Contains(column(rows, 3), "bob") {
		t.Fatalf("recall over HTTP:\n%s", text)
	}
	text = bob.ok("recall", map[string]any{"query": "ledger cache", "agent": "alice"})
	if rows := csvRows(t, text); len(rows) != 2 || rows[1][0] != "1" || rows[1][3] != "alice" || !strings.Contains(text, "filters: agent alice") {
		t.Fatalf("recall agent=alice:\n%s", text)
	}
}
