package memory

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/embed"
)

// embeddingModelEnv names a Model2Vec directory for the evaluation with
// vectors (scripts/embedding-model.sh builds the GloVe one). Not the
// server's MCP_SQLITE_EMBEDDING_MODEL, which every server a test starts
// would load.
const embeddingModelEnv = "MCP_SQLITE_EVAL_EMBEDDING_MODEL"

// evalModel loads the model named by MCP_SQLITE_EVAL_EMBEDDING_MODEL, or skips.
func evalModel(t testing.TB) *embed.Model {
	t.Helper()
	dir := os.Getenv(embeddingModelEnv)
	if dir == "" {
		t.Skipf("no embedding model: %s=\"$(scripts/embedding-model.sh)\" go test -run %s ./memory", embeddingModelEnv, t.Name())
	}
	m, err := embed.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRecallEvaluationVectors runs the evaluation without and with the
// model's vectors (DefaultFusion) on one file: with them, no suite may
// rank worse than without, nor below the floors. It logs the figures and
// the misses only when it fails (.ci/winereport reads any logged line of
// a test as a failure; BenchmarkFusionSweep prints figures).
func TestRecallEvaluationVectors(t *testing.T) {
	m := evalModel(t)
	events, queries := loadEval(t)
	s, ids := evalStore(t, events)
	words := evaluate(t, s, ids, queries, nil)
	if err := s.UseEmbeddings(context.Background(), m, DefaultFusion); err != nil {
		t.Fatal(err)
	}
	var misses []string
	fused := evaluate(t, s, ids, queries, func(q evalQuery, got []int64) {
		misses = append(misses, fmt.Sprintf("miss %-10s %q wants %v, got %v", q.suite, q.query, q.labels, got))
	})
	for _, suite := range evalSuites {
		w, f, floor := words[suite], fused[suite], evalFloors[suite]
		const eps = 1e-9
		if f.Recall5 < w.Recall5-eps || f.MRR10 < w.MRR10-eps {
			t.Errorf("%s: with vectors %v, worse than without (%v)", suite, f, w)
		}
		if f.Recall5 < floor.Recall5 || f.MRR10 < floor.MRR10 {
			t.Errorf("%s: with vectors %v, below the floor recall@5 %.2f, MRR@10 %.2f", suite, f, floor.Recall5, floor.MRR10)
		}
	}
	if t.Failed() {
		for _, suite := range evalSuites {
			t.Logf("%-10s words   %v", suite, words[suite])
			t.Logf("%-10s vectors %v", suite, fused[suite])
		}
		for _, m := range misses {
			t.Log(m)
		}
	}
}

// BenchmarkFusionSweep prints the evaluation's figures for fusions around
// DefaultFusion (as log lines, with -v), to choose it:
//
//	MCP_SQLITE_EVAL_EMBEDDING_MODEL=DIR go test -run '^$' -bench FusionSweep -benchtime 1x -v ./memory
func BenchmarkFusionSweep(b *testing.B) {
	m := evalModel(b)
	events, queries := loadEval(b)
	s, ids := evalStore(b, events)
	show := func(name string) {
		sc := evaluate(b, s, ids, queries, nil)
		b.Logf("%-26s lexical %.3f %.3f  morph %.3f %.3f  paraphrase %.3f %.3f", name,
			sc["lexical"].Recall5, sc["lexical"].MRR10, sc["morph"].Recall5, sc["morph"].MRR10, sc["paraphrase"].Recall5, sc["paraphrase"].MRR10)
	}
	show("words")
	if err := s.UseEmbeddings(context.Background(), m, DefaultFusion); err != nil {
		b.Fatal(err)
	}
	g := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	for _, depth := range []int{10, 30, 100} {
		for _, w := range []float64{0.1, 0.15, 0.25, 0.5} {
			for _, k := range []float64{20, 25, 60} {
				s.fusion = Fusion{Depth: depth, K: k, Weight: w}
				show("depth " + strconv.Itoa(depth) + " k " + g(k) + " w " + g(w))
			}
		}
	}
	b.ReportMetric(0, "ns/op")
}
