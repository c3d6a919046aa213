package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestResumeContextExcludeKindsForms: exclude_kinds is an array of kinds or
// one comma-separated string, the reference's form that the second-brain
// plugin sends (items stripped, empty ones ignored, "" excludes nothing).
func TestResumeContextExcludeKindsForms(t *testing.T) {
	t.Parallel()
	s := start(t, newDB(t))
	for _, e := range [][2]string{{"prompt", "p1"}, {"insight", "i1"}, {"compaction", "c1"}, {"a,b", "odd kind"}, {"note", "n1"}} {
		s.ok("append_event", map[string]any{"kind": e[0], "content": e[1]})
	}
	ids := func(text string) string {
		_, csv, _ := strings.Cut(text, "id,ts,kind,content\n")
		var out []string
		for _, line := range strings.Split(csv, "\n") {
			if id, _, ok := strings.Cut(line, ","); ok && !strings.HasPrefix(line, "#") {
				out = append(out, id)
			}
		}
		return strings.Join(out, " ")
	}
	tests := []struct {
		name    string
		exclude any
		want    string
		header  string
	}{
		{"plugin string", "prompt,compaction,session-end,response", "2 4 5", "# 3 events |"},
		{"items stripped, empty ignored", " prompt , ,compaction,", "2 4 5", "# 3 events |"},
		{"empty string excludes nothing", "", "1 2 3 4 5", "# 5 events |"},
		{"array", []any{"prompt", " note "}, "2 3 4", "# 3 events |"},
		{"array items are whole kinds", []any{"a,b"}, "1 2 3 5", "# 4 events |"},
		{"string splits at commas", "a,b", "1 2 3 4 5", "# 5 events |"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, isErr := s.call("get_resume_context", map[string]any{"max_events": 40, "exclude_kinds": tt.exclude})
			if isErr || ids(text) != tt.want || !strings.Contains(text, "\n"+tt.header) {
				t.Fatalf("got (error=%v) ids %q in\n%s\nwant ids %q and %q", isErr, ids(text), text, tt.want, tt.header)
			}
		})
	}
	s.fails("get_resume_context", map[string]any{"exclude_kinds": map[string]any{"kind": "prompt"}}, "INVALID_ARGUMENT")
}

// TestExcludeKindsSchemaAdmitsBothForms reads tools/list as raw JSON, as a
// host that validates arguments against the input schema does, and checks
// that the plugin's call validates in both forms and a wrong type does not.
func TestExcludeKindsSchemaAdmitsBothForms(t *testing.T) {
	t.Parallel()
	c := startRaw(t, newDB(t))
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	var msg struct {
		Result struct {
			Tools []struct {
				Name        string          `json:"name"`
				InputSchema json.RawMessage `json:"inputSchema"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(c.read()), &msg); err != nil {
		t.Fatal(err)
	}
	var raw json.RawMessage
	for _, tool := range msg.Result.Tools {
		if tool.Name == "get_resume_context" {
			raw = tool.InputSchema
		}
	}
	if raw == nil {
		t.Fatalf("no get_resume_context in tools/list (%d tools)", len(msg.Result.Tools))
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	comp := jsonschema.NewCompiler()
	if err := comp.AddResource("get_resume_context.json", doc); err != nil {
		t.Fatal(err)
	}
	schema, err := comp.Compile("get_resume_context.json")
	if err != nil {
		t.Fatalf("the input schema does not compile: %v\n%s", err, raw)
	}
	for _, tt := range []struct {
		args string
		ok   bool
	}{
		{`{"max_events": 40, "exclude_kinds": "prompt,compaction,session-end,response"}`, true},
		{`{"exclude_kinds": ""}`, true},
		{`{"exclude_kinds": ["prompt", "compaction"]}`, true},
		{`{}`, true},
		{`{"exclude_kinds": 3}`, false},
		{`{"exclude_kinds": [1]}`, false},
		{`{"max_events": 0}`, false},
	} {
		v, _ := jsonschema.UnmarshalJSON(strings.NewReader(tt.args))
		if err := schema.Validate(v); (err == nil) != tt.ok {
			t.Errorf("%s: valid=%v, want %v (%v)\nschema: %s", tt.args, err == nil, tt.ok, err, raw)
		}
	}
}

// lastSnapshotAudit waits for the newest audit row of a snapshot call
// with the given reason (its query) and returns it with its detail.
func lastSnapshotAudit(t *testing.T, s *session, reason string) (auditRow, map[string]any) {
	t.Helper()
	var row auditRow
	if !waitFor(10*time.Second, func() bool {
		found := false
		for _, r := range auditLog(t, s.db) {
			if r.tool == "snapshot" && r.query == reason {
				row, found = r, true
			}
		}
		return found
	}) {
		t.Fatalf("no snapshot audit row with reason %q: %+v", reason, auditLog(t, s.db))
	}
	var detail map[string]any
	if err := json.Unmarshal([]byte(row.detail), &detail); err != nil {
		t.Fatalf("snapshot audit row %+v: %v", row, err)
	}
	return row, detail
}

// TestSnapshotTool: snapshot(reason) writes a full copy with the naming and
// rotation of destructive_query's snapshots and audits its reason; with
// snapshots disabled, or a folder that cannot be reached, it answers
// "skipped" and the audit row says why, and every other tool still works.
func TestSnapshotTool(t *testing.T) {
	t.Parallel()
	t.Run("written and rotated", func(t *testing.T) {
		t.Parallel()
		db := newDB(t)
		s := start(t, db, "--snapshots", "2")
		s.ok("write_query", q("CREATE TABLE t(x)"))
		var paths []string
		for i := range 3 {
			s.ok("write_query", q(fmt.Sprintf("INSERT INTO t VALUES (%d)", i)))
			path, ok := strings.CutPrefix(s.ok("snapshot", map[string]any{"reason": fmt.Sprintf("session-end: other %d", i)}), "ok: snapshot written: ")
			if !ok || filepath.Dir(path) != filepath.Join(filepath.Dir(db), "memory.snapshots") || !strings.HasPrefix(filepath.Base(path), "memory.") || !strings.HasSuffix(path, "Z.db") {
				t.Fatalf("answer names %q", path)
			}
			paths = append(paths, path)
		}
		if files := snapshotFiles(t, db); !slices.Equal(files, []string{filepath.Base(paths[1]), filepath.Base(paths[2])}) {
			t.Fatalf("snapshot folder %v; want the newest 2 of %v", files, paths)
		}
		var n int
		if err := openDirect(t, paths[2]).QueryRow("SELECT count(*) FROM t").Scan(&n); err != nil || n != 3 {
			t.Fatalf("the newest snapshot holds %d rows (%v), want 3", n, err)
		}
		row, detail := lastSnapshotAudit(t, s, "session-end: other 2")
		if !row.ok || row.query != "session-end: other 2" || detail["reason"] != "session-end: other 2" || detail["snapshot"] != paths[2] {
			t.Fatalf("audit row %+v", row)
		}
		if got := s.ok("snapshot", nil); !strings.HasPrefix(got, "ok: snapshot written: ") {
			t.Fatalf("default reason: %q", got)
		}
		if row, _ := lastSnapshotAudit(t, s, "manual"); row.query != "manual" {
			t.Fatalf("default reason audited as %q", row.query)
		}
		s.fails("snapshot", map[string]any{"reason": 3}, "INVALID_ARGUMENT")
		s.fails("snapshot", map[string]any{"why": "x"}, "INVALID_ARGUMENT")
	})
	t.Run("disabled", func(t *testing.T) {
		t.Parallel()
		s := start(t, newDB(t), "--snapshots", "0")
		if got := s.ok("snapshot", map[string]any{"reason": "compaction: auto"}); got != "ok: snapshot skipped (disabled or target unavailable)" {
			t.Fatalf("got %q", got)
		}
		if files := snapshotFiles(t, s.db); len(files) != 0 {
			t.Fatalf("snapshot folder %v", files)
		}
		row, detail := lastSnapshotAudit(t, s, "compaction: auto")
		if !row.ok || detail["reason"] != "compaction: auto" || detail["snapshot"] != nil || !strings.Contains(fmt.Sprint(detail["skipped"]), "--snapshots 0") {
			t.Fatalf("audit row %+v", row)
		}
	})
	t.Run("target unavailable", func(t *testing.T) {
		t.Parallel()
		dir := testDir(t)
		blocker := filepath.Join(dir, "not-a-folder")
		if err := os.WriteFile(blocker, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		s := start(t, filepath.Join(dir, "memory.db"), "--snapshot-dir", filepath.Join(blocker, "snaps"))
		// The unreachable folder costs the snapshots, not the other tools.
		s.ok("write_query", q("CREATE TABLE t(x)"))
		s.ok("append_event", map[string]any{"content": "still writing"})
		if got := s.ok("snapshot", map[string]any{"reason": "session-end: other"}); got != "ok: snapshot skipped (disabled or target unavailable)" {
			t.Fatalf("got %q", got)
		}
		row, detail := lastSnapshotAudit(t, s, "session-end: other")
		if !row.ok || detail["snapshot"] != nil || !strings.Contains(fmt.Sprint(detail["skipped"]), "cannot create the snapshot folder") {
			t.Fatalf("audit row %+v", row)
		}
		// destructive_query refuses rather than run without its snapshot.
		s.fails("destructive_query", map[string]any{"query": "DROP TABLE t", "reason": "x"}, "DATABASE_UNAVAILABLE")
		s.ok("read_query", q("SELECT count(*) FROM t"))
	})
}
