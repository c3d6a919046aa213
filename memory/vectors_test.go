package memory

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/embed"
)

// tinyEmbedder writes and loads a 2-dimensional model in which "database"
// and "storage" point one way, "login" and "session" another; shift moves
// every vector a little (another model, another ID).
func tinyEmbedder(t *testing.T, shift float32) *embed.Model {
	t.Helper()
	dir := t.TempDir()
	words := []string{"[UNK]", "database", "storage", "login", "session", "postgres"}
	vecs := [][]float32{{0, 0}, {1, 0.1 + shift}, {0.9, 0.2}, {0.1, 1}, {0.2, 0.9}, {0.95, 0.1}}
	if err := embed.Write(dir, words, vecs, false); err != nil {
		t.Fatal(err)
	}
	m, err := embed.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// vectorRows returns the ids of memory_vectors with model and the right
// length, in id order.
func vectorRows(t *testing.T, s *Store, model string, dim int) []int64 {
	t.Helper()
	rows, err := s.db.Query(`SELECT id FROM `+TableVectors+` WHERE model = ? AND length(vector) IN (0, ?) ORDER BY id`, model, 4*dim)
	if err != nil {
		t.Fatal(err)
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
	return ids
}

func TestVectorsWrittenWithTheRow(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, filepath.Join(t.TempDir(), "m.db"))
	// Rows written before the model: caught up by UseEmbeddings.
	for _, c := range []string{"the database is SQLite", "login works again"} {
		if _, err := s.Append(ctx, "s", "note", c); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Checkpoint(ctx, "s", "storage decided"); err != nil {
		t.Fatal(err)
	}
	m := tinyEmbedder(t, 0)
	if err := s.UseEmbeddings(ctx, m, DefaultFusion); err != nil {
		t.Fatal(err)
	}
	if got := vectorRows(t, s, m.ID(), m.Dim()); !slices.Equal(got, []int64{-1, 1, 2}) {
		t.Fatalf("after the catch-up: vector rows %v, want [-1 1 2]", got)
	}
	// Rows written with the model: in the append's own transaction.
	if _, err := s.Append(ctx, "s", "note", "postgres was dropped"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Checkpoint(ctx, "s", "session handling"); err != nil {
		t.Fatal(err)
	}
	if got := vectorRows(t, s, m.ID(), m.Dim()); !slices.Equal(got, []int64{-2, -1, 1, 2, 3}) {
		t.Fatalf("after an append and a checkpoint: vector rows %v, want [-2 -1 1 2 3]", got)
	}
	// Rows appended without the model while it runs elsewhere (here: the
	// model taken away for one append) get theirs with the next append.
	s.emb = nil
	if _, err := s.Append(ctx, "s", "note", "storage written without a vector"); err != nil {
		t.Fatal(err)
	}
	s.emb = m
	if got := vectorRows(t, s, m.ID(), m.Dim()); !slices.Equal(got, []int64{-2, -1, 1, 2, 3}) {
		t.Fatalf("an append without the model wrote a vector: %v", got)
	}
	// A text with no known word is done, without a vector.
	if _, err := s.Append(ctx, "s", "note", "zzz qqq"); err != nil {
		t.Fatal(err)
	}
	var n int
	if got := vectorRows(t, s, m.ID(), m.Dim()); !slices.Equal(got, []int64{-2, -1, 1, 2, 3, 4, 5}) {
		t.Fatalf("the append after a gap: vector rows %v, want [-2 -1 1 2 3 4 5]", got)
	}
	if err := s.db.QueryRow(`SELECT length(vector) FROM ` + TableVectors + ` WHERE id = 5`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("the vector of a text without known words: %d bytes, %v", n, err)
	}
	// Another model: the old vectors are replaced.
	m2 := tinyEmbedder(t, 0.5)
	if m2.ID() == m.ID() {
		t.Fatal("two models with one ID")
	}
	if err := s.UseEmbeddings(ctx, m2, DefaultFusion); err != nil {
		t.Fatal(err)
	}
	if got := vectorRows(t, s, m2.ID(), m2.Dim()); !slices.Equal(got, []int64{-2, -1, 1, 2, 3, 4, 5}) {
		t.Fatalf("after a model change: vector rows %v", got)
	}
	if got := vectorRows(t, s, m.ID(), m.Dim()); len(got) != 0 {
		t.Fatalf("the old model's rows are left: %v", got)
	}
}

func TestFuse(t *testing.T) {
	hits := func(ids ...int64) []recallHit {
		var out []recallHit
		for _, id := range ids {
			out = append(out, recallHit{Event: Event{ID: id}})
		}
		return out
	}
	ids := func(hs []recallHit) []int64 {
		var out []int64
		for _, h := range hs {
			out = append(out, hitKey(h))
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		hits  []recallHit
		depth int
		cos   map[int64]float32
		f     Fusion
		want  []int64
	}{
		{"no vectors keep the word order", hits(1, 2, 3), 3, nil, Fusion{Depth: 3, K: 60, Weight: 1}, []int64{1, 2, 3}},
		{"a strong weight lifts the closest", hits(1, 2, 3), 3, map[int64]float32{1: 0.1, 2: 0.2, 3: 0.9}, Fusion{Depth: 3, K: 1, Weight: 2}, []int64{3, 1, 2}},
		{"a weak weight breaks only near ties", hits(1, 2, 3), 3, map[int64]float32{1: 0.1, 2: 0.2, 3: 0.9}, Fusion{Depth: 3, K: 60, Weight: 0.1}, []int64{1, 2, 3}},
		{"beyond the depth the word order stays", hits(1, 2, 3, 4), 2, map[int64]float32{1: 0.1, 2: 0.9, 4: 1}, Fusion{Depth: 2, K: 1, Weight: 2}, []int64{2, 1, 3, 4}},
		{"a candidate without a vector has no vector term", hits(1, 2), 2, map[int64]float32{2: 0.5}, Fusion{Depth: 2, K: 1, Weight: 1}, []int64{2, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ids(fuse(tc.hits, tc.depth, tc.cos, tc.f)); !slices.Equal(got, tc.want) {
				t.Fatalf("fuse: %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRecallSaysItFused(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, filepath.Join(t.TempDir(), "m.db"))
	for _, c := range []string{"the database is SQLite, not postgres", "login session expires", "the database storage grows"} {
		if _, err := s.Append(ctx, "s", "note", c); err != nil {
			t.Fatal(err)
		}
	}
	r, err := s.Recall(ctx, RecallOptions{Query: "database"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(r.Text, "vectors") {
		t.Fatalf("without a model the trailer speaks of vectors:\n%s", r.Text)
	}
	if err := s.UseEmbeddings(ctx, tinyEmbedder(t, 0), Fusion{Depth: 30, K: 1, Weight: 1}); err != nil {
		t.Fatal(err)
	}
	r, err = s.Recall(ctx, RecallOptions{Query: "database", Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.Text, "re-ranked with their embedding vectors") || r.Matched != 2 || r.Shown != 1 {
		t.Fatalf("with a model: %+v", r)
	}
	// A query the model knows no word of is the word ranking.
	r, err = s.Recall(ctx, RecallOptions{Query: "SQLite"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(r.Text, "vectors") {
		t.Fatalf("a query without a vector says it fused:\n%s", r.Text)
	}
}

// TestResumeRecallFused: get_resume_context's recall section is ranked as
// the recall tool ranks, fused with the vectors when the store has a
// model, and its header says so.
func TestResumeRecallFused(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, filepath.Join(t.TempDir(), "m.db"))
	var ids []string
	for _, c := range []string{
		"database database login session zeta",                   // words first: two hits, short
		"database storage postgres disks and other details zeta", // vectors first: all of it is storage
		"nothing about it",
	} {
		e, err := s.Append(ctx, "s", "note", c)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, itoa(e.ID))
	}
	if _, err := s.Checkpoint(ctx, "s", "later"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "s", "note", "a recent note"); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, query string
		model       bool
		want        []string
		fused       bool
	}{
		{"words only", "database", false, []string{ids[0], ids[1]}, false},
		{"fused", "database", true, []string{ids[1], ids[0]}, true},
		{"a query the model knows no word of", "zeta", true, []string{ids[0], ids[1]}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.model && s.emb == nil {
				if err := s.UseEmbeddings(ctx, tinyEmbedder(t, 0), Fusion{Depth: 30, K: 1, Weight: 2}); err != nil {
					t.Fatal(err)
				}
			}
			r, err := s.ResumeContext(ctx, ResumeOptions{MaxEvents: 2, Query: c.query})
			if err != nil {
				t.Fatal(err)
			}
			head, recs := recallSectionOf(t, r.Text)
			var got []string
			for _, rec := range recs[1:] {
				got = append(got, rec[0])
			}
			if !slices.Equal(got, c.want) || r.Fused != c.fused || strings.Contains(head, "re-ranked with their embedding vectors") != c.fused {
				t.Fatalf("recall section %v (fused %v), want %v (fused %v):\n%s", got, r.Fused, c.want, c.fused, r.Text)
			}
		})
	}
}
