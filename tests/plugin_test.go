package tests

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The second-brain plugin (Diankes/second-brain) runs against this server
// as it does against the reference 0.3.0: the flags it registers, the
// tables and views its setup makes, the raw events its hooks append, the
// snapshots its PreCompact and SessionEnd hooks take, the resume call of
// its SessionStart hook, and its scripts reading the file directly. This
// test plays that flow from the plugin's documentation (its own SQL and
// texts are not copied).

// pluginFlags are the read caps the plugin's install step registers for
// long-form notes.
var pluginFlags = []string{"--max-cell-chars", "8000", "--max-result-bytes", "131072"}

// rawKinds are the kinds the plugin's hooks write; the model never does.
const rawKinds = "prompt,compaction,session-end,response"

// pluginSetup is what the plugin's setup runs through the tools: a
// sources table through write_query and views through create_view, each
// with a description. It returns the create_view answers.
func pluginSetup(s *session) []string {
	s.t.Helper()
	if got := s.ok("write_query", q(`CREATE TABLE IF NOT EXISTS sources (
		key TEXT PRIMARY KEY, kind TEXT NOT NULL CHECK (kind IN ('paper', 'book', 'lecture', 'other')),
		title TEXT NOT NULL, authors TEXT, year INTEGER, added TEXT NOT NULL)`)); got != "ok: schema statement executed" {
		s.t.Fatalf("sources table: %q", got)
	}
	views := []struct{ name, sql, desc string }{
		{"curated", "SELECT id, ts, kind, content FROM memory_events WHERE kind NOT IN ('prompt', 'compaction', 'session-end', 'response')",
			"entries the model wrote; the hooks' raw events are left out"},
		{"entry_tags", `WITH RECURSIVE tagline(id, rest) AS (
			SELECT id, substr(content, instr(content, 'tags:') + 5) || ' ' FROM curated WHERE instr(content, 'tags:') > 0
		), words(id, word, rest) AS (
			SELECT id, '', ltrim(rest) FROM tagline
			UNION ALL
			SELECT id, substr(rest, 1, instr(rest, ' ') - 1), ltrim(substr(rest, instr(rest, ' ') + 1)) FROM words WHERE rest <> ''
		)
		SELECT id, word AS tag FROM words WHERE word LIKE '#%'`, "one row per (entry id, tag) of each curated entry's tags: line"},
		{"tag_index", "SELECT tag, count(*) AS entries, max(id) AS newest FROM entry_tags GROUP BY tag ORDER BY entries DESC, tag",
			"entries per tag with the newest id: where to start resuming a topic"},
	}
	var answers []string
	for _, v := range views {
		text, _ := s.call("create_view", map[string]any{"name": v.name, "select_sql": v.sql, "description": v.desc})
		answers = append(answers, text)
	}
	return answers
}

// TestPluginFlow plays two sessions of the plugin over stdio.
func TestPluginFlow(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	s := start(t, db, pluginFlags...)

	// Setup, first time: everything is created.
	for _, got := range pluginSetup(s) {
		if !strings.HasPrefix(got, "ok: view ") || !strings.HasSuffix(got, " created") {
			t.Fatalf("setup: %q", got)
		}
	}
	s.ok("write_query", q("INSERT INTO sources (key, kind, title, authors, year, added) VALUES ('horn-johnson', 'book', 'Matrix Analysis', 'Horn, Johnson', 2012, '2026-09-13')"))

	// The plugin's scripts open the file read-only while the server runs,
	// and keep reading while the hooks write.
	ro, err := sql.Open("sqlite", "file:"+db+"?mode=ro&_pragma=busy_timeout(2000)")
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	ro.SetMaxOpenConns(1)
	if err := ro.Ping(); err != nil {
		t.Fatal(err)
	}

	hook := func(kind, content string) {
		t.Helper()
		if got := s.ok("append_event", map[string]any{"kind": kind, "content": content}); !strings.HasPrefix(got, "ok: event ") {
			t.Fatalf("%s hook: %q", kind, got)
		}
	}
	insight := "Courant-Fischer characterises eigenvalues by min-max.\n" +
		"Claim: $\\lambda_k = \\min_{\\dim S = k} \\max_{x \\in S} R(x)$\n" +
		"Why: $\\nabla R(x) = 0$ exactly at eigenvectors.\n" +
		"Source: horn-johnson §4.2\n" +
		"tags: #spectral #min-max"
	hook("prompt", "How does Courant-Fischer characterise the eigenvalues?")
	s.ok("append_event", map[string]any{"kind": "insight", "content": insight})
	hook("response", strings.Repeat("A long answer with $\\sum_i \\lambda_i$. ", 200*1024/40)) // about 200 KB
	hook("prompt", "And for singular values?")
	s.ok("append_event", map[string]any{"kind": "open-question", "content": "Does min-max carry over to singular values?\nWhy open: not derived yet\ntags: #min-max"})
	if got := s.ok("checkpoint", map[string]any{"summary": "Goal: spectral theory\nDone: #2\nNext: singular values\ntags: #spectral"}); !strings.HasPrefix(got, "ok: checkpoint 1 written at event 5") {
		t.Fatalf("checkpoint: %q", got)
	}
	hook("prompt", "Go on.")
	s.ok("append_event", map[string]any{"kind": "insight", "content": "Singular values follow from the eigenvalues of $A^T A$.\nBuilds on: #2\ntags: #min-max"})
	for i := range 19 {
		hook("response", fmt.Sprintf("response %d: ", i)+strings.Repeat("x", 9000))
	}

	// What the cadence and validator scripts ask, read-only, mid-session.
	var prompts, curated, sourceKnown int
	if err := ro.QueryRow(`SELECT count(*) FROM memory_events WHERE kind = 'prompt' AND id > (SELECT max(
		(SELECT coalesce(max(id), 0) FROM memory_events WHERE kind IN ('insight', 'decision', 'reading', 'open-question', 'note')),
		(SELECT coalesce(max(last_event_id), 0) FROM memory_checkpoints)))`).Scan(&prompts); err != nil || prompts != 0 {
		t.Fatalf("prompts since the last curated entry: %d, %v", prompts, err)
	}
	if err := ro.QueryRow("SELECT count(*) FROM memory_events WHERE id IN (2, 5) AND kind NOT IN ('prompt', 'compaction', 'session-end', 'response')").Scan(&curated); err != nil || curated != 2 {
		t.Fatalf("linked entries: %d, %v", curated, err)
	}
	if err := ro.QueryRow("SELECT count(*) FROM sources WHERE key = 'horn-johnson'").Scan(&sourceKnown); err != nil || sourceKnown != 1 {
		t.Fatalf("source key: %d, %v", sourceKnown, err)
	}

	// PreCompact: a raw event and a snapshot.
	hook("compaction", "context compaction (auto) in /work/study; claude session abc")
	compactSnap, ok := strings.CutPrefix(s.ok("snapshot", map[string]any{"reason": "compaction: auto"}), "ok: snapshot written: ")
	if !ok {
		t.Fatal("no compaction snapshot")
	}

	// SessionStart after compaction: the hook's resume call hides the raw
	// kinds, given as the reference's comma-separated string.
	resume := s.ok("get_resume_context", map[string]any{"max_events": 40, "exclude_kinds": rawKinds})
	wantHead := "# checkpoint 1 | "
	if !strings.HasPrefix(resume, wantHead) || !strings.Contains(resume, "\nGoal: spectral theory\n") ||
		!strings.Contains(resume, "\n# 1 events since checkpoint | chain ok (27 events)\nid,ts,kind,content\n7,") ||
		strings.Contains(resume, ",response,") || strings.Contains(resume, ",prompt,") {
		t.Fatalf("resume after compaction:\n%s", resume)
	}

	// Without the filter the long responses overflow the 131072-byte cap:
	// the oldest are dropped, never the newest, and a line says how many.
	all := s.ok("get_resume_context", map[string]any{"max_events": 40})
	if !strings.Contains(all, "\n# 22 events since checkpoint | chain ok (27 events)\n") ||
		!strings.Contains(all, ",compaction,context compaction (auto)") ||
		!strings.Contains(all, "response 18: ") {
		t.Fatalf("resume without the filter lost the newest events:\n%.2000s", all)
	}
	last := all[strings.LastIndex(all, "\n")+1:]
	var dropped int
	if _, err := fmt.Sscanf(last, "# %d older events dropped to fit 131072 bytes", &dropped); err != nil || dropped < 1 || strings.Contains(all, "\n6,") {
		t.Fatalf("last line %q (dropped %d, %v)", last, dropped, err)
	}
	if shown := strings.Count(all, "\n") - strings.Count(resume, "\n"); shown <= 0 {
		t.Fatalf("unfiltered resume is not longer than the filtered one")
	}
	// The 200 KB response reads cut to --max-cell-chars.
	if got := s.ok("read_query", q("SELECT content FROM memory_events WHERE id = 3")); !strings.Contains(got, "...[+") || len(got) > 8300 || !strings.HasSuffix(got, "; 1 cells cut to 8000 chars") {
		t.Fatalf("200 KB response read back as %d bytes ending %q", len(got), got[max(0, len(got)-80):])
	}

	// Text search across the lines of a curated entry.
	found := s.ok("search_text", map[string]any{"pattern": "Courant.Fischer.*dim S", "table": "memory_events", "columns": []any{"content"},
		"where": "kind NOT IN ('prompt', 'compaction', 'session-end', 'response')", "ignore_case": true, "context_chars": 10})
	if !strings.HasPrefix(found, "key,column,snippet\n2,content,Courant-Fischer characterises eigenvalues by min-max.⏎Claim: $\\lambda_k = \\min_{\\dim S = k} \\max...\n# 1 of 1 matching values in 1 rows") {
		t.Fatalf("search across lines:\n%s", found)
	}

	// SessionEnd: a raw event and a snapshot, audited with its reason.
	hook("session-end", "session ended (other); claude session abc")
	endSnap, ok := strings.CutPrefix(s.ok("snapshot", map[string]any{"reason": "session-end: other"}), "ok: snapshot written: ")
	if !ok || endSnap == compactSnap {
		t.Fatalf("session-end snapshot %q (compaction's %q)", endSnap, compactSnap)
	}
	for _, p := range []string{compactSnap, endSnap} {
		if fi, err := os.Stat(p); err != nil || filepath.Dir(p) != filepath.Join(filepath.Dir(db), "memory.snapshots") || fi.Size() == 0 {
			t.Fatalf("snapshot %s: %v", p, err)
		}
	}
	row, detail := lastSnapshotAudit(t, s, "session-end: other")
	if !row.ok || row.query != "session-end: other" || detail["reason"] != "session-end: other" || detail["snapshot"] != endSnap {
		t.Fatalf("snapshot audit row %+v", row)
	}
	var snapEvents int
	if err := openDirect(t, endSnap).QueryRow("SELECT count(*) FROM memory_events").Scan(&snapEvents); err != nil || snapEvents != 28 {
		t.Fatalf("session-end snapshot holds %d events (%v), want 28", snapEvents, err)
	}

	// The read-only reader sees everything the server wrote, and the
	// rules script lists the views from sqlite_master.
	var events, checkpoints int
	if err := ro.QueryRow("SELECT (SELECT count(*) FROM memory_events), (SELECT count(*) FROM memory_checkpoints)").Scan(&events, &checkpoints); err != nil || events != 28 || checkpoints != 1 {
		t.Fatalf("read-only reader: %d events, %d checkpoints, %v", events, checkpoints, err)
	}
	var views string
	if err := ro.QueryRow("SELECT group_concat(name, ' ') FROM (SELECT name FROM sqlite_master WHERE type = 'view' ORDER BY name)").Scan(&views); err != nil || views != "curated entry_tags query_errors tag_index" {
		t.Fatalf("views in sqlite_master: %q, %v", views, err)
	}
	if got := s.ok("read_query", q("SELECT tag, entries, newest FROM tag_index")); got != "tag,entries,newest\n#min-max,3,7\n#spectral,1,2\n# 2 rows" {
		t.Fatalf("tag index: %q", got)
	}
	s.c.Close()

	// Next session, a new server process: setup again is harmless (the
	// table is IF NOT EXISTS, each view is refused with the replace hint),
	// and get_schema still shows what each view is for.
	s2 := start(t, db, pluginFlags...)
	for _, got := range pluginSetup(s2) {
		if !strings.HasPrefix(got, "INVALID_ARGUMENT: view ") || !strings.Contains(got, "already exists; pass replace=true") {
			t.Fatalf("setup again: %q", got)
		}
	}
	schema := s2.ok("get_schema", nil)
	for _, want := range []string{
		"CREATE VIEW \"curated\" AS\n-- description: entries the model wrote; the hooks' raw events are left out\nSELECT",
		"CREATE VIEW \"entry_tags\" AS\n-- description: one row per (entry id, tag) of each curated entry's tags: line\nWITH RECURSIVE",
		"CREATE VIEW \"tag_index\" AS\n-- description: entries per tag with the newest id: where to start resuming a topic\nSELECT",
		"CREATE TABLE sources (",
	} {
		if !strings.Contains(schema, want) {
			t.Fatalf("get_schema lacks %q:\n%s", want, schema)
		}
	}
	if v := s2.verify(); !v.OK || v.Events != 28 {
		t.Fatalf("chain after two sessions: %+v", v)
	}
	// Every hook call is in the audit log like any other call.
	s2.audited(db)
	var hooks int
	if err := ro.QueryRow("SELECT count(*) FROM query_log WHERE tool = 'append_event' AND ok = 1").Scan(&hooks); err != nil || hooks != 28 {
		t.Fatalf("%d append_event audit rows (%v), want 28", hooks, err)
	}
	var detailJSON string
	if err := ro.QueryRow("SELECT detail FROM query_log WHERE tool = 'snapshot' AND query = 'compaction: auto'").Scan(&detailJSON); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(detailJSON), &detail); err != nil || detail["snapshot"] != compactSnap {
		t.Fatalf("compaction snapshot audit detail %s", detailJSON)
	}
}
