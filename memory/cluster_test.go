package memory

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// applyPlan runs stmts in one transaction, as rqlite's ?transaction does:
// the first failing statement rolls all of them back.
func applyPlan(ctx context.Context, db *sql.DB, stmts []Stmt) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	for i, s := range stmts {
		if _, err := tx.ExecContext(ctx, s.SQL, s.Args...); err != nil {
			_ = tx.Rollback()
			return fmt.Errorf("statement %d (%.60s): %w", i, s.SQL, err)
		}
	}
	return tx.Commit()
}

// clusterFile makes a file with ClusterSchema applied, as a new cluster's
// first front does, in WAL mode as rqlite keeps its node files.
func clusterFile(t testing.TB, vectors bool) (string, *sql.DB) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "node.sqlite")
	db := rawDB(t, path)
	mustExec(t, db, `PRAGMA journal_mode=WAL`)
	schema := ClusterSchema()
	if vectors {
		schema = append(schema, ClusterVectorSchema()...)
	}
	if err := applyPlan(context.Background(), db, schema); err != nil {
		t.Fatal(err)
	}
	return path, db
}

// clusterOp is one append (or checkpoint) of the equivalence workload.
type clusterOp struct {
	checkpoint          bool
	session, kind, text string
}

// clusterWorkload is n appends with varied text (identifiers, unicode,
// CRLF, padding, empty kinds, agents in the session) and a checkpoint
// every 40 operations.
func clusterWorkload(n int) []clusterOp {
	texts := []string{
		"decided to cache the orders_7 lookup in cacheKey; see max_update_rows",
		"  Café au lait: the naïve résumé parser fails on e\u0301 (combining)  ",
		"line one\r\nline two\r\n\tindented: CRLF kept inside",
		"日本語のメモ: データベース storage layer 移行",
		"emoji 🚀 deploy of HTTPServer2 via parseJSONBody() and user-id-42",
		"\u00a0\u2003padded with Unicode white space\u2028",
		"quotes \"double\" and 'single', backslash \\ and <tag>&amp;",
		"retrying the login session after postgres timeout; configs updated",
	}
	kinds := []string{"note", "", "  decision ", "todo", "\t", "bug-fix", "Ünïcode"}
	var ops []clusterOp
	for i := range n {
		if i%40 == 39 {
			ops = append(ops, clusterOp{checkpoint: true, session: "20260301T090000Z-ab12", text: fmt.Sprintf("  checkpoint %d: cache_key work and café notes\r\n", i)})
			continue
		}
		session := "20260301T090000Z-ab12"
		if i%3 == 1 {
			session = "20260301T090000Z-cd34@agent-" + fmt.Sprint(i%5)
		}
		ops = append(ops, clusterOp{session: session, kind: kinds[i%len(kinds)], text: fmt.Sprintf("%s #%d", texts[i%len(texts)], i)})
	}
	return ops
}

// tableRows dumps a table (blobs as hex), sorted, for comparing files.
func tableRows(t testing.TB, db *sql.DB, table string) []string {
	t.Helper()
	rows, err := db.Query(`SELECT * FROM "` + table + `"`)
	if err != nil {
		t.Fatalf("dump %s: %v", table, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, v := range vals {
			if bs, ok := v.([]byte); ok {
				v = "x'" + hex.EncodeToString(bs) + "'"
			}
			fmt.Fprintf(&b, "%v|", v)
		}
		out = append(out, b.String())
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// memoryTables are the tables whose contents a local store and the plans
// must write alike: the chain, the checkpoints, and every shadow table of
// the three indexes (FTS5 keeps an index's whole state in them).
func memoryTables(vectors bool) []string {
	out := []string{TableEvents, TableCheckpoints}
	for _, idx := range []string{IndexEvents, IndexCheckpoints, IndexRecall} {
		for _, shadow := range []string{"_data", "_idx", "_docsize", "_config"} {
			out = append(out, idx+shadow)
		}
	}
	if vectors {
		out = append(out, TableVectors)
	}
	return out
}

// TestClusterPlansEqualLocalStore is the equivalence proof: the same
// events and checkpoints, once through a local Store and once as plans
// applied on a ClusterSchema file, leave the same rows in the chain, the
// checkpoints and every index, and the node's file, opened with OpenNode,
// answers recall and get_resume_context as the local store does.
func TestClusterPlansEqualLocalStore(t *testing.T) {
	for _, tc := range []struct {
		name    string
		vectors bool
	}{{"words", false}, {"vectors", true}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			start := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
			var emb Embedder
			if tc.vectors {
				emb = tinyEmbedder(t, 0)
			}

			local := openStore(t, filepath.Join(t.TempDir(), "local.db"))
			fixedClock(local, start)
			if emb != nil {
				if err := local.UseEmbeddings(ctx, emb, DefaultFusion); err != nil {
					t.Fatal(err)
				}
			}
			path, db := clusterFile(t, tc.vectors)

			ops := clusterWorkload(300)
			for i, op := range ops {
				ts := start.Add(time.Duration(i) * time.Second)
				head, err := ReadHead(ctx, db)
				if err != nil {
					t.Fatal(err)
				}
				if op.checkpoint {
					want, err := local.Checkpoint(ctx, op.session, op.text)
					if err != nil {
						t.Fatal(err)
					}
					c, plan, err := PlanCheckpoint(head, ts, op.session, op.text, emb)
					if err != nil {
						t.Fatal(err)
					}
					if err := applyPlan(ctx, db, plan); err != nil {
						t.Fatalf("op %d: %v", i, err)
					}
					c.ID = want.ID // the plan leaves the id to SQLite
					if c != want {
						t.Fatalf("op %d: planned checkpoint %+v, local %+v", i, c, want)
					}
					continue
				}
				want, err := local.Append(ctx, op.session, op.kind, op.text)
				if err != nil {
					t.Fatal(err)
				}
				e, plan, err := PlanAppend(head, ts, op.session, op.kind, op.text, emb)
				if err != nil {
					t.Fatal(err)
				}
				if e != want {
					t.Fatalf("op %d: planned event %+v, local %+v", i, e, want)
				}
				if err := applyPlan(ctx, db, plan); err != nil {
					t.Fatalf("op %d: %v", i, err)
				}
			}

			// (b) the same rows, in the chain and in every index.
			for _, table := range memoryTables(tc.vectors) {
				got, want := tableRows(t, db, table), tableRows(t, local.db, table)
				if !slices.Equal(got, want) {
					t.Errorf("%s: the plans wrote %d rows, the local store %d; first plan rows %.3q, local %.3q", table, len(got), len(want), got, want)
				}
			}
			if n := len(tableRows(t, db, TableEvents)); n != 293 {
				t.Fatalf("%d events, want 293", n)
			}

			// (a) and (c): the node's file, read where it is.
			node, err := OpenNode(ctx, path, emb, DefaultFusion, testLogger(t))
			if err != nil {
				t.Fatal(err)
			}
			defer node.Close()
			v, err := node.Verify(ctx)
			if err != nil || !v.OK || v.Events != 293 {
				t.Fatalf("Verify = %+v, %v; want an intact chain of 293", v, err)
			}
			for _, q := range []string{"orders_7", "cache key", "cafe", "データベース", "HTTPServer2", "postgres login", "checkpoint", "storage"} {
				got, err := node.Recall(ctx, RecallOptions{Query: q, Limit: 7})
				if err != nil {
					t.Fatalf("node recall %q: %v", q, err)
				}
				want, err := local.Recall(ctx, RecallOptions{Query: q, Limit: 7})
				if err != nil {
					t.Fatal(err)
				}
				if got.Text != want.Text || got.Matched == 0 {
					t.Errorf("recall %q on the node:\n%s\nlocal:\n%s", q, got.Text, want.Text)
				}
			}
			for _, opt := range []ResumeOptions{{}, {Query: "cache_key café", MaxEvents: 5}, {ExcludeKinds: []string{"todo"}, MaxEvents: 3}} {
				got, err := node.ResumeContext(ctx, opt)
				if err != nil {
					t.Fatal(err)
				}
				want, err := local.ResumeContext(ctx, opt)
				if err != nil {
					t.Fatal(err)
				}
				if got.Text != want.Text {
					t.Errorf("resume %+v on the node:\n%s\nlocal:\n%s", opt, got.Text, want.Text)
				}
			}
		})
	}
}

// TestClusterPlanRaceForTheHead: two plans made on the same head (two
// fronts that read it at once): the second fails on the chain guard and
// leaves nothing, also for the first event (the genesis prev_hash). A
// fork with a made-up id is refused by the prev_hash index itself.
func TestClusterPlanRaceForTheHead(t *testing.T) {
	ctx := context.Background()
	_, db := clusterFile(t, false)
	ts := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	dump := func() []string {
		var out []string
		for _, table := range append(memoryTables(false), TableClusterGuard) {
			out = append(out, tableRows(t, db, table)...)
		}
		return out
	}
	for round := range 3 {
		head, err := ReadHead(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		_, first, err := PlanAppend(head, ts, "s-1", "note", fmt.Sprintf("front one, round %d", round), nil)
		if err != nil {
			t.Fatal(err)
		}
		_, second, err := PlanAppend(head, ts, "s-2", "note", fmt.Sprintf("front two, round %d", round), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := applyPlan(ctx, db, first); err != nil {
			t.Fatal(err)
		}
		before := dump()
		err = applyPlan(ctx, db, second)
		if err == nil || !ChainConflict(err.Error()) {
			t.Fatalf("round %d: the second plan on head %d: %v, want a chain conflict", round, head.ID, err)
		}
		if after := dump(); !slices.Equal(before, after) {
			t.Fatalf("round %d: the refused plan changed the file", round)
		}
	}
	// Same prev_hash, another id: only the prev_hash index refuses it.
	head, _ := ReadHead(ctx, db)
	var prev string
	if err := db.QueryRow(`SELECT prev_hash FROM memory_events WHERE id = ?`, head.ID).Scan(&prev); err != nil {
		t.Fatal(err)
	}
	_, fork, _ := PlanAppend(Head{ID: head.ID, Hash: prev}, ts, "s-3", "note", "a fork", nil)
	err := applyPlan(ctx, db, fork)
	if err == nil || !strings.Contains(err.Error(), "UNIQUE constraint failed: memory_events.prev_hash") || !ChainConflict(err.Error()) {
		t.Fatalf("fork on prev_hash %s: %v, want the prev_hash guard", prev[:8], err)
	}
	// The retry after an unknown outcome finds the event by its hash.
	e, _, _ := PlanAppend(Head{ID: head.ID - 1, Hash: prev}, ts, "s-1", "note", "front one, round 2", nil)
	got, found, err := FindEvent(ctx, db, e.Hash)
	if err != nil || !found || got != e {
		t.Fatalf("FindEvent = %+v, %v, %v; want %+v", got, found, err, e)
	}
	if _, found, err := FindEvent(ctx, db, GenesisHash); err != nil || found {
		t.Fatalf("FindEvent(genesis) = %v, %v; want not found", found, err)
	}
}

// TestClusterGuards: the schema-version guard fails a request once the
// schema changed, the update-rows guard one whose statement changed too
// many rows, and the plans' stored-row guard one whose row a foreign
// trigger dropped; each leaves the file as it was.
func TestClusterGuards(t *testing.T) {
	ctx := context.Background()
	_, db := clusterFile(t, false)
	mustExec(t, db, `CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER)`)
	mustExec(t, db, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10) INSERT INTO t (v) SELECT i FROM n`)
	var version int64
	if err := db.QueryRow(`PRAGMA schema_version`).Scan(&version); err != nil {
		t.Fatal(err)
	}
	// Every front runs ClusterSchema at start: on a made file it must not
	// change the schema version, or it would fail other fronts' writes.
	if err := applyPlan(ctx, db, ClusterSchema()); err != nil {
		t.Fatal(err)
	}
	sum := func() (n int64) {
		if err := db.QueryRow(`SELECT total(v) FROM t`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	update := Stmt{SQL: `UPDATE t SET v = v + 1`}
	steps := []struct {
		name  string
		setup string
		plan  []Stmt
		ok    bool
	}{
		{"schema unchanged", "", []Stmt{SchemaGuard(version), update}, true},
		{"rows within the limit", "", []Stmt{update, UpdateRowsGuard(10)}, true},
		{"too many rows", "", []Stmt{update, UpdateRowsGuard(9)}, false},
		{"schema changed", `CREATE TABLE u (x)`, []Stmt{SchemaGuard(version), update}, false},
	}
	want := sum()
	for _, st := range steps {
		if st.setup != "" {
			mustExec(t, db, st.setup)
		}
		err := applyPlan(ctx, db, st.plan)
		if st.ok {
			if err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
			want += 10
		} else if err == nil || !GuardFailed(err.Error()) {
			t.Fatalf("%s: %v, want the guard's CHECK to fail", st.name, err)
		}
		if got := sum(); got != want {
			t.Fatalf("%s: sum %d, want %d", st.name, got, want)
		}
	}

	// A trigger another program added drops the rows: the stored-row
	// guard fails the plan, so no index row is written for a missing row.
	mustExec(t, db, `CREATE TRIGGER drop_events BEFORE INSERT ON memory_events BEGIN SELECT RAISE(IGNORE); END`)
	mustExec(t, db, `CREATE TRIGGER drop_checkpoints BEFORE INSERT ON memory_checkpoints BEGIN SELECT RAISE(IGNORE); END`)
	_, appendPlan, _ := PlanAppend(Head{Hash: GenesisHash}, time.Now(), "s", "note", "dropped", nil)
	_, checkpointPlan, _ := PlanCheckpoint(Head{Hash: GenesisHash}, time.Now(), "s", "dropped", nil)
	dump := func() (out []string) {
		for _, table := range append(memoryTables(false), TableClusterGuard) {
			out = append(out, tableRows(t, db, table)...)
		}
		return out
	}
	before := dump()
	for _, plan := range [][]Stmt{appendPlan, checkpointPlan} {
		if err := applyPlan(ctx, db, plan); err == nil || !GuardFailed(err.Error()) {
			t.Fatalf("plan under a dropping trigger: %v, want the stored-row guard", err)
		}
	}
	if after := dump(); !slices.Equal(before, after) {
		t.Fatal("refused plans changed the memory tables or their indexes")
	}
}

// TestClusterPlanArguments: the plans strip and refuse as Append and
// Checkpoint do.
func TestClusterPlanArguments(t *testing.T) {
	head := Head{ID: 41, Hash: strings.Repeat("a", 64)}
	ts := time.Date(2026, 3, 1, 9, 0, 0, 0, time.FixedZone("CET", 3600))
	for _, tc := range []struct {
		kind, content      string
		wantKind, wantText string
		wantErr            error
	}{
		{"", " hello ", "note", "hello", nil},
		{" \t ", "x", "note", "x", nil},
		{" decision\r\n", "a\r\nb", "decision", "a\r\nb", nil},
		{"note", " \u00a0\u2003 ", "", "", ErrEmptyContent},
		{"note", "", "", "", ErrEmptyContent},
	} {
		e, plan, err := PlanAppend(head, ts, "s", tc.kind, tc.content, nil)
		if !errors.Is(err, tc.wantErr) {
			t.Fatalf("PlanAppend(%q, %q): %v, want %v", tc.kind, tc.content, err, tc.wantErr)
		}
		if err != nil {
			if plan != nil {
				t.Fatalf("a refused append has a plan")
			}
			continue
		}
		want := Event{ID: 42, TS: "2026-03-01T08:00:00Z", Session: "s", Kind: tc.wantKind, Content: tc.wantText, PrevHash: head.Hash}
		want.Hash = Hash(want.ID, want.TS, want.Session, want.Kind, want.Content, want.PrevHash)
		if e != want {
			t.Fatalf("PlanAppend(%q, %q) = %+v, want %+v", tc.kind, tc.content, e, want)
		}
	}
	if _, plan, err := PlanCheckpoint(head, ts, "s", " \r\n ", nil); !errors.Is(err, ErrEmptySummary) || plan != nil {
		t.Fatalf("PlanCheckpoint of white space: %v", err)
	}
	c, _, err := PlanCheckpoint(head, ts, "s", " sum ", nil)
	if err != nil || c != (Checkpoint{TS: "2026-03-01T08:00:00Z", Session: "s", Summary: "sum", LastEventID: 41, HeadHash: head.Hash}) {
		t.Fatalf("PlanCheckpoint = %+v, %v", c, err)
	}
}

// TestClusterNodeReadsOnly: a node's file (a cluster's schema, one event
// that another program wrote without index rows) opened with OpenNode:
// recall, resume context and verify answer, and no other connection sees
// a change (PRAGMA data_version), although the index lags.
func TestClusterNodeReadsOnly(t *testing.T) {
	ctx := context.Background()
	path, db := clusterFile(t, false)
	_, plan, _ := PlanAppend(Head{Hash: GenesisHash}, time.Now(), "s", "note", "indexed cache_key event", nil)
	if err := applyPlan(ctx, db, plan); err != nil {
		t.Fatal(err)
	}
	lagging, _, _ := PlanAppend(Head{ID: 1, Hash: plan[0].Args[6].(string)}, time.Now(), "s", "note", "unindexed cache_key event", nil)
	mustExec(t, db, `INSERT INTO memory_events VALUES (?, ?, ?, ?, ?, ?, ?)`, lagging.ID, lagging.TS, lagging.Session, lagging.Kind, lagging.Content, lagging.PrevHash, lagging.Hash)
	watch, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	version := func() (v int64) {
		if err := watch.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := version()

	node, err := OpenNode(ctx, path, nil, DefaultFusion, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	r, err := node.Recall(ctx, RecallOptions{Query: "cache_key"})
	if err != nil || r.Matched != 1 {
		t.Fatalf("Recall = %+v, %v; want the indexed event", r, err)
	}
	res, err := node.ResumeContext(ctx, ResumeOptions{Query: "cache_key"})
	if err != nil || !res.Chain.OK || res.Chain.Events != 2 {
		t.Fatalf("ResumeContext = %+v, %v", res.Chain, err)
	}
	if after := version(); after != before {
		t.Fatalf("data_version %d -> %d: the node's reader wrote the file", before, after)
	}
	if _, err := node.Append(ctx, "s", "note", "x"); err == nil {
		t.Fatal("Append through OpenNode succeeded; the node's file is rqlite's")
	}
}

// TestClusterSchemaServedLocally: a cluster's file (a node's backup) is
// a memory database the single-file server opens: the foreign-objects
// check counts the guard index and table as the server's own, and Open
// adds nothing to it.
func TestClusterSchemaServedLocally(t *testing.T) {
	path, db := clusterFile(t, false)
	_, plan, _ := PlanAppend(Head{Hash: GenesisHash}, time.Now(), "s", "note", "from the cluster", nil)
	if err := applyPlan(context.Background(), db, plan); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s := openStore(t, path)
	if added := s.Opened().Added; len(added) > 0 {
		t.Fatalf("Open added %v to a cluster's file", added)
	}
	if _, err := s.Append(context.Background(), "s", "note", "and locally"); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Verify(context.Background()); err != nil || !v.OK || v.Events != 2 {
		t.Fatalf("Verify = %+v, %v", v, err)
	}
}

// TestClusterFrontsAppendAtOnce: three fronts, each with its own
// connections, append through plans at once, as over rqlite: a front
// that lost the race for the head plans again on the new one, and one
// whose outcome it pretends not to know finds its event by hash instead
// of appending it again. The result is one chain holding every event
// once, each indexed once.
func TestClusterFrontsAppendAtOnce(t *testing.T) {
	ctx := context.Background()
	path, _ := clusterFile(t, false)
	const fronts, each = 3, 40
	ts := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	errs := make(chan error, fronts)
	var conflicts struct{ lost, found atomic.Int64 }
	for f := range fronts {
		db := rawDB(t, path)
		go func() {
			errs <- func() error {
				for i := range each {
					content := fmt.Sprintf("front %d event %d cache_key", f, i)
					var last Event  // the event of a try whose outcome is unknown
					var lastOK bool // and whether that try in fact committed
					for try := 0; ; try++ {
						if try > 100 {
							return fmt.Errorf("%s: no append after %d tries", content, try)
						}
						if last.Hash != "" {
							_, found, err := FindEvent(ctx, db, last.Hash)
							if err != nil {
								return err
							}
							if found != lastOK {
								return fmt.Errorf("%s: FindEvent found=%v after a try that committed=%v", content, found, lastOK)
							}
							if found {
								conflicts.found.Add(1)
								break
							}
							last = Event{}
						}
						head, err := ReadHead(ctx, db)
						if err != nil {
							return err
						}
						e, plan, err := PlanAppend(head, ts, fmt.Sprintf("s-%d", f), "note", content, nil)
						if err != nil {
							return err
						}
						err = applyPlan(ctx, db, plan)
						if i%7 == 3 && try == 0 {
							last, lastOK = e, err == nil // pretend the answer was lost
							continue
						}
						if err == nil {
							break
						}
						if ChainConflict(err.Error()) {
							conflicts.lost.Add(1)
						} else if !errors.Is(markBusy(err), ErrBusy) {
							return err
						}
					}
				}
				return nil
			}()
		}()
	}
	for range fronts {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// A test logs only on failure (.ci/winereport, which runs with -v):
	// the counts say whether both paths ran.
	if conflicts.found.Load() == 0 {
		t.Errorf("no event of an unknown outcome was looked for (%d races lost): the test did not exercise the look by hash", conflicts.lost.Load())
	}
	node, err := OpenNode(ctx, path, nil, DefaultFusion, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	if v, err := node.Verify(ctx); err != nil || !v.OK || v.Events != fronts*each {
		t.Fatalf("Verify = %+v, %v; want one intact chain of %d", v, err, fronts*each)
	}
	var distinct, fts, recall int
	if err := node.db.QueryRow(`SELECT (SELECT count(DISTINCT content) FROM memory_events), (SELECT count(*) FROM memory_events_fts_docsize), (SELECT count(*) FROM memory_recall_docsize)`).
		Scan(&distinct, &fts, &recall); err != nil {
		t.Fatal(err)
	}
	if distinct != fronts*each || fts != fronts*each || recall != fronts*each {
		t.Fatalf("%d distinct contents, %d and %d index rows; want %d of each", distinct, fts, recall, fronts*each)
	}
	if r, err := node.Recall(ctx, RecallOptions{Query: "cache_key", Limit: 1}); err != nil || r.Matched != fronts*each {
		t.Fatalf("Recall matched %d, %v; want %d", r.Matched, err, fronts*each)
	}
}

// TestClusterErrorWords: the errors the fronts tell apart, as SQLite
// words them through modernc and as rqlite reports them.
func TestClusterErrorWords(t *testing.T) {
	for _, tc := range []struct {
		msg             string
		conflict, guard bool
	}{
		{"UNIQUE constraint failed: memory_events.id", true, false},
		{"constraint failed: UNIQUE constraint failed: memory_events.prev_hash (2067)", true, false},
		{"UNIQUE constraint failed: memory_events.hash", false, false},
		{"UNIQUE constraint failed: notes.id", false, false},
		{"CHECK constraint failed: ok = 1", false, true},
		{"constraint failed: CHECK constraint failed: ok = 1 (275)", false, true},
		{"CHECK constraint failed: price > 0", false, false},
		{"database is locked", false, false},
	} {
		if got := ChainConflict(tc.msg); got != tc.conflict {
			t.Errorf("ChainConflict(%q) = %v", tc.msg, got)
		}
		if got := GuardFailed(tc.msg); got != tc.guard {
			t.Errorf("GuardFailed(%q) = %v", tc.msg, got)
		}
	}
}

// TestClusterSchemaIsTheLocalSchema: a cluster's sqlite_master is a local
// file's, object for object and byte for byte, plus the two guards.
func TestClusterSchemaIsTheLocalSchema(t *testing.T) {
	_, db := clusterFile(t, false)
	local := openStore(t, filepath.Join(t.TempDir(), "local.db"))
	schema := func(db *sql.DB) []string {
		var out []string
		for _, row := range masterRows(t, db) {
			f := strings.SplitN(row, "|", 5) // type|name|tbl|rootpage|sql: the page may differ
			out = append(out, f[0]+"|"+f[1]+"|"+f[2]+"|"+f[4])
		}
		return out
	}
	got, want := schema(db), schema(local.db)
	guards := []string{
		"index|" + IndexChainGuard + "|" + TableEvents + `|true|"CREATE UNIQUE INDEX memory_events_prev_hash ON memory_events(prev_hash)"`,
		"table|" + TableClusterGuard + "|" + TableClusterGuard + `|true|"CREATE TABLE memory_cluster_guard (k INTEGER PRIMARY KEY, ok INTEGER NOT NULL CHECK (ok = 1))"`,
	}
	if !slices.Equal(got, append(want, guards...)) {
		t.Fatalf("cluster schema:\n%s\nlocal schema and the guards:\n%s", strings.Join(got, "\n"), strings.Join(append(want, guards...), "\n"))
	}
}

// TestClusterPlanArgsAreJSON: every argument of every plan is nil, int64
// or string, which JSON carries to rqlite unchanged (a []byte would be
// stored as base64 TEXT, a sql.Null* as an object).
func TestClusterPlanArgsAreJSON(t *testing.T) {
	emb := tinyEmbedder(t, 0)
	head := Head{ID: 3, Hash: strings.Repeat("b", 64)}
	_, a, _ := PlanAppend(head, time.Now(), "s", "k", "database storage", emb)
	_, c, _ := PlanCheckpoint(head, time.Now(), "s", "login session", emb)
	plans := map[string][]Stmt{
		"schema": ClusterSchema(), "vectors": ClusterVectorSchema(), "append": a, "checkpoint": c,
		"guards": {SchemaGuard(7), UpdateRowsGuard(1000)},
	}
	for name, plan := range plans {
		for i, s := range plan {
			for j, arg := range s.Args {
				switch arg.(type) {
				case nil, int64, string:
				default:
					t.Errorf("%s statement %d argument %d is a %T", name, i, j, arg)
				}
			}
		}
	}
}
