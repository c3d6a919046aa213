package memory

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func exportOf(t *testing.T, path string) []byte {
	t.Helper()
	s, err := OpenExisting(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var b bytes.Buffer
	if _, err := s.Export(context.Background(), &b, nil); err != nil {
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
			if got := matchIDs(t, ts.db, rankedSQL, "first OR notes"); len(got) == 0 {
				t.Fatal("imported events are not indexed")
			}
			if v, err := ts.Verify(ctx); err != nil || !v.OK {
				t.Fatalf("imported chain: %+v, %v", v, err)
			}
		})
	}

	// The export's first lines, as the format promises.
	lines := strings.Split(string(exportOf(t, empty)), "\n")
	if !strings.HasPrefix(lines[0], `{"type":"checkpoint","id":1,"ts":"`) || !strings.Contains(lines[0], `"last_event_id":0,"head_hash":"`+GenesisHash+`"}`) ||
		!strings.HasPrefix(lines[1], `{"type":"event","id":1,"ts":"`) || !strings.HasSuffix(lines[1], `"kind":"note","content":"first","prev_hash":"`+GenesisHash+`","hash":"`+lines[1][len(lines[1])-66:]) {
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
