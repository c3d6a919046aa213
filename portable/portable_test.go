package portable

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/memory"
)

func exportOf(t *testing.T, path string) []byte {
	t.Helper()
	s, err := memory.OpenExisting(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var b bytes.Buffer
	if _, err := Export(context.Background(), s, &b, nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// memoryRows dumps every column of both memory tables, with SQLite's types.
func memoryRows(t *testing.T, path string) []string {
	t.Helper()
	db := rawDB(t, path+"?mode=ro")
	var out []string
	for _, q := range []string{
		`SELECT id, typeof(ts), ts, session, kind, content, prev_hash, hash FROM memory_events ORDER BY id`,
		`SELECT id, typeof(last_event_id), ts, session, summary, last_event_id, head_hash, '' FROM memory_checkpoints ORDER BY id`,
	} {
		rows, err := db.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id int64
			var f [7]string
			if err := rows.Scan(&id, &f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6]); err != nil {
				t.Fatal(err)
			}
			out = append(out, strings.Join(append([]string{itoa(id)}, f[:]...), "|"))
		}
		rows.Close()
	}
	return out
}

func TestExportImportRoundTrip(t *testing.T) {
	ctx := context.Background()
	// The reference's file (its contents hold U+2028, DEL, quotes, a
	// backslash and non-ASCII text), grown by this server with a checkpoint
	// of the empty chain first in a second file.
	ref := copyReference(t)
	s := openStore(t, ref)
	if _, err := s.Append(ctx, "20260201T120000Z-beef", "decision", "tab\there \"q\" \\ </script> \u00e9\u2028"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Checkpoint(ctx, "20260201T120000Z-beef", "second checkpoint"); err != nil {
		t.Fatal(err)
	}
	s.Close()

	empty := filepath.Join(t.TempDir(), "empty.db")
	e := openStore(t, empty)
	if _, err := e.Checkpoint(ctx, "s", "nothing yet"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Append(ctx, "s", "note", "first"); err != nil {
		t.Fatal(err)
	}
	e.Close()

	for name, src := range map[string]string{"reference": ref, "checkpoint first": empty} {
		t.Run(name, func(t *testing.T) {
			first := exportOf(t, src)
			v, err := VerifyJSONL(bytes.NewReader(first))
			if err != nil {
				t.Fatal(err)
			}
			dbv, err := openStore(t, src).Verify(ctx)
			if err != nil || v.JSON() != dbv.JSON() {
				t.Fatalf("verify --jsonl = %s, verify --db = %s (%v)", v.JSON(), dbv.JSON(), err)
			}
			target := filepath.Join(t.TempDir(), "sub", "new.db")
			st, err := Import(ctx, target, bytes.NewReader(first), nil)
			if err != nil {
				t.Fatal(err)
			}
			// The recall index too, which a cluster node's store
			// (memory.OpenNode) never catches up: a row per event and
			// checkpoint, written by the import itself (read before any
			// store opens the file: a local one fills it in the
			// background).
			var recalled int64
			if err := rawDB(t, target).QueryRow(`SELECT count(*) FROM ` + memory.IndexRecall + `_docsize`).Scan(&recalled); err != nil || recalled != st.Events+st.Checkpoints {
				t.Fatalf("the recall index holds %d rows for %d events and %d checkpoints (%v)", recalled, st.Events, st.Checkpoints, err)
			}
			if want := memoryRows(t, src); !slices.Equal(memoryRows(t, target), want) {
				t.Fatalf("imported rows differ:\n got %q\nwant %q", memoryRows(t, target), want)
			}
			if int(st.Events+st.Checkpoints) != bytes.Count(first, []byte("\n")) {
				t.Fatalf("stats %+v for %d lines", st, bytes.Count(first, []byte("\n")))
			}
			if second := exportOf(t, target); !bytes.Equal(first, second) {
				t.Fatalf("second export differs:\n%s\n---\n%s", first, second)
			}
			// The import is indexed: recall works on the new file.
			ts := openStore(t, target)
			if got := matchIDs(t, rawDB(t, target), rankedSQL, "first OR notes"); len(got) == 0 {
				t.Fatal("imported events are not indexed")
			}
			if v, err := ts.Verify(ctx); err != nil || !v.OK {
				t.Fatalf("imported chain: %+v, %v", v, err)
			}
		})
	}

	// The export's first lines, as the format promises.
	lines := strings.Split(string(exportOf(t, empty)), "\n")
	if !strings.HasPrefix(lines[0], `{"type":"checkpoint","id":1,"ts":"`) || !strings.Contains(lines[0], `"last_event_id":0,"head_hash":"`+memory.GenesisHash+`"}`) ||
		!strings.HasPrefix(lines[1], `{"type":"event","id":1,"ts":"`) || !strings.HasSuffix(lines[1], `"kind":"note","content":"first","prev_hash":"`+memory.GenesisHash+`","hash":"`+lines[1][len(lines[1])-66:]) {
		t.Fatalf("export lines: %q", lines)
	}
}

func TestImportRefuses(t *testing.T) {
	ctx := context.Background()
	good := exportOf(t, copyReference(t)) // 8 events, checkpoint 1 after event 5
	lines := strings.SplitAfter(string(good), "\n")
	if len(lines) != 10 || lines[9] != "" || !strings.Contains(lines[5], `"type":"checkpoint"`) {
		t.Fatalf("unexpected export: %q", lines)
	}
	edit := func(i int, f func(string) string) string {
		c := slices.Clone(lines)
		c[i] = f(c[i])
		return strings.Join(c, "")
	}
	cases := []struct {
		name, file string
		line       int
		msg        string
		broken     string // the verify --jsonl reason, "" when the chain is fine
	}{
		{"tampered content", edit(2, func(l string) string { return strings.Replace(l, `"content":"`, `"content":"X`, 1) }), 3,
			"event 3 breaks the chain: " + reasonHash, reasonHash},
		{"event removed", edit(3, func(string) string { return "" }), 4,
			"event 5 breaks the chain: id gap: expected event 4, found 5", "id gap: expected event 4, found 5 (rows were deleted or renumbered)"},
		{"relinked", edit(1, func(l string) string { return strings.Replace(l, `"prev_hash":"fd0c`, `"prev_hash":"0d0c`, 1) }), 2,
			"event 2 breaks the chain: prev_hash does not match the hash of event 1", "prev_hash does not match the hash of event 1"},
		{"not json", edit(4, func(string) string { return "{oops\n" }), 5, "not an export line", ""},
		{"unknown field", edit(0, func(l string) string { return strings.Replace(l, `{"type"`, `{"extra":1,"type"`, 1) }), 1, "unknown field", ""},
		{"missing hash", edit(0, func(l string) string { return l[:strings.Index(l, `,"hash"`)] + "}\n" }), 1, `lacks ["hash"]`, ""},
		{"checkpoint moved", strings.Join([]string{lines[0], lines[5], lines[1], lines[2], lines[3], lines[4], lines[6], lines[7], lines[8]}, ""), 2,
			"checkpoint 1 is anchored to event 5 but follows event 1", ""},
		{"bad type", edit(0, func(l string) string { return strings.Replace(l, `"event"`, `"evnt"`, 1) }), 1, `"type" must be`, ""},
		// Untrusted input (issue 29 item 8): keys match exactly and once,
		// text is UTF-8, checkpoints are judged by verify too.
		{"key in other case", edit(2, func(l string) string { return strings.Replace(l, `"content":`, `"CONTENT":`, 1) }), 3, `unknown field "CONTENT"`, ""},
		{"key twice", edit(2, func(l string) string { return strings.Replace(l, `"content":`, `"content":"benign","content":`, 1) }), 3, `key "content" appears twice`, ""},
		{"benign and evil", edit(2, func(l string) string { return strings.Replace(l, `"content":`, `"CONTENT":"evil","content":`, 1) }), 3, `unknown field "CONTENT"`, ""},
		{"not UTF-8", edit(2, func(l string) string { return strings.Replace(l, `"content":"`, "\"content\":\"\xff", 1) }), 3, "is not UTF-8", ""},
		{"lone surrogate", edit(2, func(l string) string { return strings.Replace(l, `"content":"`, `"content":"\ud800`, 1) }), 3, "surrogate", ""},
		{"raw control character", edit(2, func(l string) string { return strings.Replace(l, `"content":"`, "\"content\":\"\x01", 1) }), 3, "control character", ""},
		{"fractional id", edit(2, func(l string) string { return strings.Replace(l, `"id":3,`, `"id":3.0,`, 1) }), 3, `"id" must be an integer`, ""},
		{"string id", edit(2, func(l string) string { return strings.Replace(l, `"id":3,`, `"id":"3",`, 1) }), 3, `"id" must be an integer`, ""},
		{"checkpoint head_hash", edit(5, func(l string) string { return strings.Replace(l, `"head_hash":"`, `"head_hash":"0`, 1) }), 6, "head_hash is not the hash of event 5", ""},
		{"checkpoint twice", strings.Join(slices.Insert(slices.Clone(lines), 6, lines[5]), ""), 7, "checkpoint 1 follows checkpoint 1", ""},
		{"line too long", edit(2, func(l string) string {
			return strings.Replace(l, `"content":"`, `"content":"`+strings.Repeat("x", MaxLineBytes), 1)
		}), 3, "longer than 16 MiB", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			target := filepath.Join(t.TempDir(), "new.db")
			_, err := Import(ctx, target, strings.NewReader(c.file), nil)
			var le *LineError
			if !errors.As(err, &le) || le.Line != c.line || !strings.Contains(le.Msg, c.msg) {
				t.Fatalf("import: %v, want line %d: %s", err, c.line, c.msg)
			}
			// Nothing behind: no database, no -wal, no -shm, no temporary.
			if left, _ := os.ReadDir(filepath.Dir(target)); len(left) != 0 {
				t.Fatalf("a refused import left %v", left)
			}
			v, err := VerifyJSONL(strings.NewReader(c.file))
			switch {
			case c.broken == "":
				if !errors.As(err, &le) || le.Line != c.line {
					t.Fatalf("verify --jsonl: %+v, %v; want a line error at %d", v, err, c.line)
				}
			default:
				if err != nil || v.OK || v.Reason != c.broken {
					t.Fatalf("verify --jsonl: %+v, %v; want broken: %s", v, err, c.broken)
				}
			}
		})
	}

	// A target that holds events.
	full := copyReference(t)
	if _, err := Import(ctx, full, bytes.NewReader(good), nil); !errors.Is(err, ErrTargetNotEmpty) {
		t.Fatalf("non-empty target: %v", err)
	}
}

// notUTF8Content is a content another program stored, with bytes that are
// not UTF-8 of every sort beside UTF-8 text.
const notUTF8Content = "caf\xe9 \xff\xfe, \xe6\x97 cut, \xed\xa0\x80 CESU, \xc0\x80 overlong, \xf4\x90\x80\x80 too high, \xc3é, é\xa9, \"q\" \\ tab\t日"

// appendForeign appends an event as another program would, hashing the
// bytes as stored (as Verify does), and a checkpoint anchored to it.
func appendForeign(t *testing.T, path, content, summary string) {
	t.Helper()
	db := rawDB(t, path)
	var head int64
	prev := memory.GenesisHash
	if err := db.QueryRow(`SELECT id, hash FROM memory_events ORDER BY id DESC LIMIT 1`).Scan(&head, &prev); err != nil && !errors.Is(err, sql.ErrNoRows) {
		t.Fatal(err)
	}
	const ts, sess = "2026-03-01T08:00:00Z", "20260301T080000Z-0bad"
	hash := memory.Hash(head+1, ts, sess, "note", content, prev)
	mustExec(t, db, `INSERT INTO memory_events (id, ts, session, kind, content, prev_hash, hash) VALUES (?, ?, ?, 'note', CAST(? AS TEXT), ?, ?)`,
		head+1, ts, sess, []byte(content), prev, hash)
	mustExec(t, db, `INSERT INTO memory_checkpoints (ts, session, summary, last_event_id, head_hash) VALUES (?, ?, CAST(? AS TEXT), ?, ?)`,
		ts, sess, []byte(summary), head+1, hash)
	db.Close()
}

// A memory that verifies exports, whatever bytes its texts hold (issue 43
// item 8): verify --jsonl agrees with Verify, and the import's rows and
// hashes are the stored ones, byte for byte.
func TestExportImportNotUTF8(t *testing.T) {
	ctx := context.Background()
	src := copyReference(t)
	appendForeign(t, src, notUTF8Content, "summary \xc3\x28")
	s := openStore(t, src)
	if _, err := s.Append(ctx, "20260301T090000Z-beef", "note", "after"); err != nil {
		t.Fatal(err)
	}
	dbv, err := s.Verify(ctx)
	if err != nil || !dbv.OK || dbv.Events != 10 {
		t.Fatalf("verify --db = %+v, %v", dbv, err)
	}
	first := exportOf(t, src)
	if !utf8.Valid(first) {
		t.Fatalf("the export is not UTF-8:\n%s", first)
	}
	if v, err := VerifyJSONL(bytes.NewReader(first)); err != nil || v.JSON() != dbv.JSON() {
		t.Fatalf("verify --jsonl = %s, %v; verify --db = %s", v.JSON(), err, dbv.JSON())
	}
	target := filepath.Join(t.TempDir(), "new.db")
	if _, err := Import(ctx, target, bytes.NewReader(first), nil); err != nil {
		t.Fatal(err)
	}
	got, want := memoryRows(t, target), memoryRows(t, src)
	if !slices.Equal(got, want) || !slices.ContainsFunc(got, func(r string) bool { return strings.Contains(r, notUTF8Content) }) {
		t.Fatalf("imported rows differ:\n got %q\nwant %q", got, want)
	}
	if v, err := openStore(t, target).Verify(ctx); err != nil || v.JSON() != dbv.JSON() {
		t.Fatalf("verify of the import = %s, %v", v.JSON(), err)
	}
	if second := exportOf(t, target); !bytes.Equal(first, second) {
		t.Fatalf("second export differs:\n%s\n---\n%s", first, second)
	}
}

// Python, the reference's language, reads the export with its own
// convention for such bytes (PEP 383's surrogateescape): the texts it gets
// back are the stored bytes, and its hash of each event, computed as the
// reference computes it, is the exported hash.
func TestExportNotUTF8ReadByPython(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found (.ci/run installs it)")
	}
	src := copyReference(t)
	appendForeign(t, src, notUTF8Content, "summary \xc3\x28")
	export := filepath.Join(t.TempDir(), "export.jsonl")
	if err := os.WriteFile(export, exportOf(t, src), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `
import hashlib, json, sqlite3, sys
db = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)
db.text_factory = bytes
stored = {r[0]: r[1:] for r in db.execute("SELECT id, ts, session, kind, content, prev_hash, hash FROM memory_events")}
summaries = {r[0]: r[1] for r in db.execute("SELECT id, summary FROM memory_checkpoints")}
n = 0
for line in open(sys.argv[2], encoding="utf-8"):
    o = json.loads(line)
    if o["type"] == "checkpoint":
        assert o["summary"].encode("utf-8", "surrogateescape") == summaries[o["id"]], o
        continue
    ev = [o["id"], o["ts"], o["session"], o["kind"], o["content"], o["prev_hash"]]
    assert [v.encode("utf-8", "surrogateescape") for v in ev[1:]] + [o["hash"].encode()] == list(stored[o["id"]]), (o, stored[o["id"]])
    canon = json.dumps(ev, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogateescape")
    assert hashlib.sha256(canon).hexdigest() == o["hash"], o
    n += 1
print(n)
`
	out, err := exec.Command(python, "-c", script, src, export).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "9" {
		t.Fatalf("python read the export differently: %v\n%s", err, out)
	}
}

// A BLOB in a text column breaks the chain for Verify; an export holds
// strings only and would read as intact, so Export refuses it, naming
// the event.
func TestExportRefusesBlob(t *testing.T) {
	ctx := context.Background()
	src := copyReference(t)
	db := rawDB(t, src)
	content := "blob \xff"
	prev := "f652d334102fe4a98215ed2fb2b07c4e10febdd7b73a25dd4be19a33c6251d12" // event 8's
	mustExec(t, db, `INSERT INTO memory_events (id, ts, session, kind, content, prev_hash, hash) VALUES (9, 's', 's', 'note', ?, ?, ?)`,
		[]byte(content), prev, memory.Hash(9, "s", "s", "note", content, prev))
	db.Close()
	s := openStore(t, src)
	if v, err := s.Verify(ctx); err != nil || v.OK || v.BreakAtID != 9 {
		t.Fatalf("verify --db = %+v, %v; want broken at 9", v, err)
	}
	var b bytes.Buffer
	_, err := Export(ctx, s, &b, nil)
	if err == nil || !strings.Contains(err.Error(), "event 9: its content is stored as a blob, not text") {
		t.Fatalf("export = %v, want a refusal naming event 9", err)
	}
}

// A store opened read-only (the person's view) exports what the server's
// store exports.
func TestExportReadOnly(t *testing.T) {
	ctx := context.Background()
	path := copyReference(t)
	want := exportOf(t, path)
	r, err := memory.OpenReadOnly(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got bytes.Buffer
	if _, err := Export(ctx, r, &got, nil); err != nil || !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("export through OpenReadOnly differs (%v):\n%s\n---\n%s", err, got.Bytes(), want)
	}
}
