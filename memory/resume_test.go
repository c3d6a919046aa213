package memory

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestResumeContext(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, filepath.Join(t.TempDir(), "m.db"))
	fixedClock(s, time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC))
	const sess = "20260105T090000Z-a1b2"

	r, err := s.ResumeContext(ctx, ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "# no checkpoint yet\n\n# 0 events | chain ok (0 events)"; r.Text != want {
		t.Fatalf("empty:\n%q\nwant\n%q", r.Text, want)
	}
	// A checkpoint on an empty chain anchors to the genesis hash.
	c0, err := s.Checkpoint(ctx, sess, "nothing yet")
	if err != nil || c0.LastEventID != 0 || c0.HeadHash != GenesisHash {
		t.Fatalf("checkpoint 0 = %+v, %v", c0, err)
	}
	if r, err = s.ResumeContext(ctx, ResumeOptions{}); err != nil || !r.Anchored {
		t.Fatalf("anchored at 0: %+v %v", r, err)
	}

	for _, e := range []struct{ kind, content string }{
		{"note", "one"}, {"prompt", "raw prompt"}, {"decision", "two, with comma"}, {"note", "three\n\"quoted\""},
		{"prompt", "raw prompt 2"}, {"note", strings.Repeat("é", 30)},
	} {
		if _, err := s.Append(ctx, sess, e.kind, e.content); err != nil {
			t.Fatal(err)
		}
	}
	// Clock: 09:00:00 was the checkpoint, events are 09:00:01..06.
	cases := []struct {
		name string
		opt  ResumeOptions
		want string
	}{
		{"no checkpoint events, all", ResumeOptions{MaxEvents: 50},
			"# checkpoint 1 | 2026-01-05T09:00:00Z | session " + sess + " | at event 0\n" +
				"nothing yet\n\n" +
				"# 6 events since checkpoint | chain ok (6 events)\n" +
				"id,ts,kind,content\n" +
				"1,2026-01-05T09:00:01Z,note,one\n" +
				"2,2026-01-05T09:00:02Z,prompt,raw prompt\n" +
				"3,2026-01-05T09:00:03Z,decision,\"two, with comma\"\n" +
				"4,2026-01-05T09:00:04Z,note,\"three\n\"\"quoted\"\"\"\n" +
				"5,2026-01-05T09:00:05Z,prompt,raw prompt 2\n" +
				"6,2026-01-05T09:00:06Z,note," + strings.Repeat("é", 30)},
		{"max events and excluded kinds", ResumeOptions{MaxEvents: 2, ExcludeKinds: []string{" prompt ", ""}},
			"# checkpoint 1 | 2026-01-05T09:00:00Z | session " + sess + " | at event 0\n" +
				"nothing yet\n\n" +
				"# 4 events since checkpoint, showing the most recent 2 | chain ok (6 events)\n" +
				"id,ts,kind,content\n" +
				"4,2026-01-05T09:00:04Z,note,\"three\n\"\"quoted\"\"\"\n" +
				"6,2026-01-05T09:00:06Z,note," + strings.Repeat("é", 30)},
		{"cells cut", ResumeOptions{ExcludeKinds: []string{"prompt", "decision"}, MaxCellChars: 4},
			"# checkpoint 1 | 2026-01-05T09:00:00Z | session " + sess + " | at event 0\n" +
				"nothing yet\n\n" +
				"# 3 events since checkpoint | chain ok (6 events)\n" +
				"id,ts,kind,content\n" +
				"1,2026...[+16 chars],note,one\n" +
				"4,2026...[+16 chars],note,thre...[+10 chars]\n" +
				"6,2026...[+16 chars],note,éééé...[+26 chars]"},
		// header 19 bytes, event 6 is 87: only the newest fits in 110.
		{"byte cap keeps the newest", ResumeOptions{MaxBytes: 110},
			"# checkpoint 1 | 2026-01-05T09:00:00Z | session " + sess + " | at event 0\n" +
				"nothing yet\n\n" +
				"# 6 events since checkpoint | chain ok (6 events)\n" +
				"id,ts,kind,content\n" +
				"6,2026-01-05T09:00:06Z,note," + strings.Repeat("é", 30) + "\n" +
				"# 5 older events dropped to fit 110 bytes; read them with read_query on memory_events"},
		{"byte cap always keeps one", ResumeOptions{MaxBytes: 1, ExcludeKinds: []string{"note"}},
			"# checkpoint 1 | 2026-01-05T09:00:00Z | session " + sess + " | at event 0\n" +
				"nothing yet\n\n" +
				"# 3 events since checkpoint | chain ok (6 events)\n" +
				"id,ts,kind,content\n" +
				"5,2026-01-05T09:00:05Z,prompt,raw prompt 2\n" +
				"# 2 older events dropped to fit 1 bytes; read them with read_query on memory_events"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := s.ResumeContext(ctx, c.opt)
			if err != nil {
				t.Fatal(err)
			}
			if r.Text != c.want {
				t.Fatalf("got\n%s\n---want\n%s", r.Text, c.want)
			}
		})
	}

	// A later checkpoint with nothing after it.
	if _, err := s.Checkpoint(ctx, "other", "all done\nnext: ship"); err != nil {
		t.Fatal(err)
	}
	r, err = s.ResumeContext(ctx, ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := "# checkpoint 2 | 2026-01-05T09:00:07Z | session other | at event 6\nall done\nnext: ship\n\n" +
		"# 0 events since checkpoint | chain ok (6 events)"
	if r.Text != want || r.Total != 0 || r.Shown != 0 {
		t.Fatalf("got\n%q\nwant\n%q", r.Text, want)
	}
}
