package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

// verifySequential is the chain check written plainly (one row at a time,
// strings, database/sql), the yardstick for the batched, parallel Verify.
func verifySequential(t *testing.T, db *sql.DB) Verification {
	t.Helper()
	rows, err := db.Query(`SELECT id, ts, session, kind, content, prev_hash, hash, typeof(ts) || typeof(session) || typeof(kind) || typeof(content) || typeof(prev_hash) || typeof(hash) FROM memory_events ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	v := Verification{OK: true, HeadHash: GenesisHash}
	for rows.Next() {
		var e Event
		var types string
		if err := rows.Scan(&e.ID, &e.TS, &e.Session, &e.Kind, &e.Content, &e.PrevHash, &e.Hash, &types); err != nil {
			t.Fatal(err)
		}
		reason := ""
		switch {
		case e.ID != v.HeadID+1:
			reason = fmt.Sprintf(reasonGapFmt, v.HeadID+1, e.ID)
		case e.PrevHash != v.HeadHash:
			reason = fmt.Sprintf(reasonPrevFmt, e.ID-1)
		case types != "texttexttexttexttexttext" || e.Hash != Hash(e.ID, e.TS, e.Session, e.Kind, e.Content, e.PrevHash):
			reason = reasonHash
		}
		if reason != "" {
			v.OK, v.BreakAtID, v.Reason = false, e.ID, reason
			break
		}
		v.Events, v.HeadID, v.HeadHash = e.ID, e.ID, e.Hash
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if !v.OK {
		if err := db.QueryRow(`SELECT count(*) FROM memory_events`).Scan(&v.Events); err != nil {
			t.Fatal(err)
		}
	}
	return v
}

// Breaks anywhere in a chain several batches long, at and around batch
// boundaries and the middle where a split check divides it, are reported
// exactly as the sequential check reports them, whether the chain is read
// by one connection or split between two.
func TestVerifyMatchesSequential(t *testing.T) {
	for _, split := range []bool{false, true} {
		t.Run(fmt.Sprintf("split=%v", split), func(t *testing.T) {
			old := splitMin
			defer func() { splitMin = old }()
			splitMin = 1 << 62
			if split {
				splitMin = 2
			}
			testVerifyMatchesSequential(t, split)
		})
	}
}

func testVerifyMatchesSequential(t *testing.T, split bool) {
	const n = 3*batchEvents + 17
	base := filepath.Join(t.TempDir(), "chain.db")
	s := openStore(t, base)
	if err := fillChain(s, n); err != nil {
		t.Fatal(err)
	}
	s.Close()
	type tamper struct {
		name string
		sql  func(id int) string
	}
	tampers := []tamper{
		{"content", func(id int) string {
			return fmt.Sprintf(`UPDATE memory_events SET content = content || '!' WHERE id = %d`, id)
		}},
		{"hash", func(id int) string {
			return fmt.Sprintf(`UPDATE memory_events SET hash = replace(hash, substr(hash, 1, 1), CASE substr(hash, 1, 1) WHEN 'a' THEN 'b' ELSE 'a' END) WHERE id = %d`, id)
		}},
		{"prev_hash", func(id int) string {
			return fmt.Sprintf(`UPDATE memory_events SET prev_hash = '%s' WHERE id = %d AND id > 1`, Hash(0, "", "", "", "x", ""), id)
		}},
		{"delete", func(id int) string { return fmt.Sprintf(`DELETE FROM memory_events WHERE id = %d`, id) }},
		{"blob", func(id int) string {
			return fmt.Sprintf(`UPDATE memory_events SET kind = CAST(kind AS BLOB) WHERE id = %d`, id)
		}},
		{"short hash", func(id int) string {
			return fmt.Sprintf(`UPDATE memory_events SET hash = substr(hash, 2) WHERE id = %d`, id)
		}},
	}
	ids := []int{1, 2, batchEvents - 1, batchEvents, batchEvents + 1, n/2 - 1, n / 2, n/2 + 1, n/2 + 2, 2*batchEvents + 1, n - 1, n}
	if raceEnabled {
		// What -race can find here is in the concurrent (split) check,
		// which any break reaches; the plain run tries every boundary.
		ids = []int{1, batchEvents, n/2 + 1, n}
	}
	ctx := context.Background()
	for _, tp := range tampers {
		for _, id := range ids {
			t.Run(fmt.Sprintf("%s/%d", tp.name, id), func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "m.db")
				// Durability is not under test here: no syncs (144 copies).
				raw := rawDB(t, base+"?_pragma=synchronous(0)")
				mustExec(t, raw, `VACUUM INTO ?`, path)
				raw = rawDB(t, path+"?_pragma=synchronous(0)")
				mustExec(t, raw, `PRAGMA journal_mode = WAL`) // snapshots need WAL
				mustExec(t, raw, `DROP TRIGGER memory_events_no_update`)
				mustExec(t, raw, `DROP TRIGGER memory_events_no_delete`)
				mustExec(t, raw, tp.sql(id))
				// A second, later break must never hide the first.
				mustExec(t, raw, tampers[0].sql(n))
				want := verifySequential(t, raw)
				st, err := OpenExisting(ctx, path, testLogger(t))
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				got, err := st.Verify(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Fatalf("Verify = %+v\nsequential %+v", got, want)
				}
				if got.OK && !(tp.name == "delete" && id == n) { // a shorter chain is intact
					t.Fatal("tampered chain verified")
				}
			})
		}
	}
	t.Run("intact", func(t *testing.T) {
		st, err := OpenExisting(ctx, base, testLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		got, err := st.Verify(ctx)
		if want := verifySequential(t, rawDB(t, base)); err != nil || got != want || !got.OK || got.Events != n {
			t.Fatalf("Verify = %+v, %v; want %+v", got, err, want)
		}
		// The split check ran (it keeps its second connection), or not.
		if vc := st.verifiers.idle; vc == nil || (vc.other.Load() != nil) != split {
			t.Fatalf("second connection open: %v, want %v", vc != nil && vc.other.Load() != nil, split)
		}
	})
}

// Concurrent checks each get a connection; a cancelled one reports the
// cancellation; a closed store refuses. Chains are split between two
// connections here.
func TestVerifyConcurrentAndCancelled(t *testing.T) {
	old := splitMin
	defer func() { splitMin = old }()
	splitMin = 2
	s := openStore(t, filepath.Join(t.TempDir(), "m.db"))
	if err := fillChain(s, 2*batchEvents); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			v, err := s.Verify(context.Background())
			if err != nil || !v.OK || v.Events != 2*batchEvents {
				t.Errorf("Verify = %+v, %v", v, err)
			}
		})
	}
	wg.Wait()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Verify(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Verify: %v", err)
	}
	if v, err := s.Verify(context.Background()); err != nil || !v.OK {
		t.Errorf("Verify after a cancelled one = %+v, %v", v, err)
	}
	s.Close()
	if _, err := s.Verify(context.Background()); err == nil {
		t.Error("Verify on a closed store succeeded")
	}
}
