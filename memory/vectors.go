package memory

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/policy"
)

// Meaning (issue 47 step 4): with a local embedding model
// (--embedding-model), each event and checkpoint summary has a vector,
// stored in memory_vectors in the transaction of its append (an event's
// row under its id, a checkpoint's under minus its id, as in the recall
// index), and recall re-ranks the word matches with them. Without a model
// the table is neither created nor read, and recall is the word ranking.

// TableVectors holds one vector per event and checkpoint summary.
const TableVectors = policy.TableVectors

// vectorsDDL creates the vector table: model is the Embedder's ID, vector
// its little-endian float32s (empty when the model knows no word of the
// text: the row is then done, and has no vector).
const vectorsDDL = `CREATE TABLE IF NOT EXISTS ` + TableVectors + ` (
    id     INTEGER PRIMARY KEY,
    model  TEXT NOT NULL,
    vector BLOB NOT NULL
)`

// Embedder turns a text into an L2-normalised vector (embed.Model), or
// nil when it knows none of its words.
type Embedder interface {
	Embed(text string) []float32
	Dim() int
	// ID names the model by its contents.
	ID() string
}

// Fusion is how recall puts the word ranking and the vector ranking
// together: the Depth best word matches are the candidates, each scored
// 1/(K+word rank) + Weight/(K+vector rank) (reciprocal rank fusion, ranks
// from 1; a candidate without a vector has no vector term), ties kept in
// word order. Matches beyond Depth keep their word order after them.
type Fusion struct {
	Depth  int
	K      float64
	Weight float64
}

// DefaultFusion is the fusion the evaluation chose (docs/recall.md).
var DefaultFusion = Fusion{Depth: 30, K: 25, Weight: 0.1}

// UseEmbeddings turns vectors on for this store: the vector table is
// created, vectors of another model are deleted, the events and
// checkpoints without a vector get one (in transactions of catchUpBatch
// rows), and from then on every append and checkpoint writes its vector in
// its own transaction and Recall fuses.
func (s *Store) UseEmbeddings(ctx context.Context, m Embedder, f Fusion) error {
	s.writeMu.Lock()
	err := func() error {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }()
		if _, err := tx.ExecContext(ctx, vectorsDDL); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM `+TableVectors+` WHERE model <> ?`, m.ID())
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n > 0 {
			s.log.Info("the embedding model changed: its vectors are computed again", "model", m.ID(), "rows", n)
		}
		return tx.Commit()
	}()
	if err == nil && s.vectorInsert == nil {
		s.vectorInsert, err = s.db.PrepareContext(ctx, vectorInsertSQL)
	}
	if err == nil {
		s.emb, s.fusion = m, f
	}
	s.writeMu.Unlock()
	if err != nil {
		return fmt.Errorf("memory: vectors: %w", err)
	}
	start := time.Now()
	var total int64
	for _, checkpoints := range []bool{false, true} {
		for {
			n, err := s.vectorBatch(ctx, checkpoints)
			if err != nil {
				return fmt.Errorf("memory: vectors: %w", err)
			}
			total += n
			if n == 0 {
				break
			}
			s.log.Debug("vectors written", "rows", total)
		}
	}
	if total > 0 {
		s.log.Info("vectors computed for the rows that had none", "rows", total, "took", time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// vectorBatch writes the vectors of up to catchUpBatch rows that have none,
// in one transaction, and returns how many.
func (s *Store) vectorBatch(ctx context.Context, checkpoints bool) (int64, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback() }()
	have, err := lastVector(ctx, tx, checkpoints)
	if err != nil {
		return 0, err
	}
	source := TableEvents
	if checkpoints {
		source = TableCheckpoints
	}
	var head int64
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM `+source).Scan(&head); err != nil {
		return 0, err
	}
	to := min(head, have+catchUpBatch)
	if to <= have {
		return 0, nil
	}
	if err := s.vectorsThrough(ctx, tx, checkpoints, have, to); err != nil {
		return 0, err
	}
	return to - have, tx.Commit()
}

// lastVector is the id of the last event (or checkpoint) with a vector row.
func lastVector(ctx context.Context, tx *sql.Tx, checkpoints bool) (int64, error) {
	q := `SELECT coalesce(max(id), 0) FROM ` + TableVectors + ` WHERE id > 0`
	if checkpoints {
		q = `SELECT coalesce(-min(id), 0) FROM ` + TableVectors + ` WHERE id < 0`
	}
	var id int64
	err := tx.QueryRowContext(ctx, q).Scan(&id)
	return id, err
}

// vectorsThrough writes the vectors of the events (or checkpoints) with
// ids in (from, to] inside tx. The text embedded is the recall index's
// (recallText): the text and its identifiers' words.
func (s *Store) vectorsThrough(ctx context.Context, tx *sql.Tx, checkpoints bool, from, to int64) error {
	q := `SELECT id, content FROM ` + TableEvents + ` WHERE id > ? AND id <= ? ORDER BY id`
	if checkpoints {
		q = `SELECT id, summary FROM ` + TableCheckpoints + ` WHERE id > ? AND id <= ? ORDER BY id`
	}
	rows, err := tx.QueryContext(ctx, q, from, to)
	if err != nil {
		return err
	}
	type row struct {
		id   int64
		text string
	}
	var todo []row
	for rows.Next() {
		var r row
		var text sql.NullString
		if err := rows.Scan(&r.id, &text); err != nil {
			rows.Close()
			return err
		}
		r.text = text.String
		todo = append(todo, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	ins := tx.StmtContext(ctx, s.vectorInsert)
	model := s.emb.ID()
	for _, r := range todo {
		id := r.id
		if checkpoints {
			id = -id
		}
		if _, err := ins.ExecContext(ctx, id, model, encodeVector(s.emb.Embed(recallText(r.text)))); err != nil {
			return err
		}
	}
	return nil
}

// vectorsUpTo writes, inside an append's transaction, the vectors of the
// rows through id that have none: the new row (whose text is text), and
// those others appended since (at most catchUpBatch; a longer backlog is
// the next start's).
func (s *Store) vectorsUpTo(ctx context.Context, tx *sql.Tx, checkpoints bool, id int64, text string) error {
	if s.emb == nil {
		return nil
	}
	have, err := lastVector(ctx, tx, checkpoints)
	if err != nil || have >= id {
		return err
	}
	if have < id-1 {
		return s.vectorsThrough(ctx, tx, checkpoints, max(have, id-catchUpBatch), id)
	}
	key := id
	if checkpoints {
		key = -id
	}
	_, err = tx.StmtContext(ctx, s.vectorInsert).ExecContext(ctx, key, s.emb.ID(), encodeVector(s.emb.Embed(recallText(text))))
	return err
}

// vectorInsertSQL writes one vector row.
const vectorInsertSQL = `INSERT OR REPLACE INTO ` + TableVectors + ` (id, model, vector) VALUES (?, ?, ?)`

// encodeVector is v as little-endian float32s (empty for nil).
func encodeVector(v []float32) []byte {
	out := make([]byte, 0, 4*len(v))
	for _, x := range v {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(x))
	}
	return out
}

// fuseRecall re-orders hits (the word ranking, best first) by reciprocal
// rank fusion with the cosine of each candidate's vector to the query's
// (see Fusion), reading the candidates' vectors inside tx. It reports
// whether vectors took part (the query has a vector).
func (s *Store) fuseRecall(ctx context.Context, tx *sql.Tx, query string, hits []recallHit) ([]recallHit, bool, error) {
	qv := s.emb.Embed(recallText(query))
	if qv == nil || len(hits) < 2 {
		return hits, qv != nil, nil
	}
	depth := min(len(hits), s.fusion.Depth)
	ids := make([]string, depth)
	for i, h := range hits[:depth] {
		ids[i] = strconv.FormatInt(hitKey(h), 10)
	}
	rows, err := tx.QueryContext(ctx, `SELECT id, vector FROM `+TableVectors+` WHERE model = ? AND id IN (SELECT value FROM json_each(?))`,
		s.emb.ID(), "["+strings.Join(ids, ",")+"]")
	if err != nil {
		return nil, false, err
	}
	cos := map[int64]float32{}
	v := make([]float32, s.emb.Dim())
	for rows.Next() {
		var id int64
		var b []byte
		if err := rows.Scan(&id, &b); err != nil {
			rows.Close()
			return nil, false, err
		}
		if decodeVector(b, v) {
			cos[id] = dot(qv, v)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	return fuse(hits, depth, cos, s.fusion), true, nil
}

// fuse is the Fusion of hits[:depth] given each candidate's cosine (by
// hitKey; a candidate without one has no vector rank).
func fuse(hits []recallHit, depth int, cos map[int64]float32, f Fusion) []recallHit {
	cand := make([]int, 0, depth)
	for i := range hits[:depth] {
		if _, ok := cos[hitKey(hits[i])]; ok {
			cand = append(cand, i)
		}
	}
	sort.SliceStable(cand, func(a, b int) bool { return cos[hitKey(hits[cand[a]])] > cos[hitKey(hits[cand[b]])] })
	vrank := make(map[int]int, len(cand))
	for r, i := range cand {
		vrank[i] = r + 1
	}
	score := make([]float64, depth)
	for i := range score {
		score[i] = 1 / (f.K + float64(i+1))
		if r, ok := vrank[i]; ok {
			score[i] += f.Weight / (f.K + float64(r))
		}
	}
	order := make([]int, depth)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return score[order[a]] > score[order[b]] })
	out := make([]recallHit, 0, len(hits))
	for _, i := range order {
		out = append(out, hits[i])
	}
	return append(out, hits[depth:]...)
}

// hitKey is a hit's id in the recall index and the vector table.
func hitKey(h recallHit) int64 {
	if h.Checkpoint {
		return -h.ID
	}
	return h.ID
}

func decodeVector(b []byte, dst []float32) bool {
	if len(b) != 4*len(dst) {
		return false
	}
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return true
}

func dot(a, b []float32) float32 {
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}
