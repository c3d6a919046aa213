package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkUndoSnapshot measures destructive_query's snapshot on a large
// database (1 GiB, generated in a temporary folder; MCP_SQLITE_BENCH_UNDO_MB
// changes the size) with the default --snapshot-mode auto, which makes it
// an undo record:
//
//   - deleting one row, against the same DELETE by a server with
//     --snapshots 0 on the same file, calls interleaved (SPEC 10: at most
//     3x, the snapshot at most 1 MB), and by one with --snapshot-mode full
//     (what every snapshot cost before undo records);
//   - deleting 10% of a 100 MB table: the record against the size of the
//     deleted rows (at most 2x);
//   - applying each record, as restore does, and the restore command on
//     one (its wait and its safety record's size).
//
// It needs four times the database's size free and skips otherwise.
func BenchmarkUndoSnapshot(b *testing.B) {
	mb := 1024
	if v, err := strconv.Atoi(os.Getenv("MCP_SQLITE_BENCH_UNDO_MB")); err == nil && v > 100 {
		mb = v
	}
	dir := testDir(b)
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil || int64(fs.Bavail)*int64(fs.Bsize) < 4*int64(mb)<<20 {
		b.Skipf("needs %d MB free in %s", 4*mb, dir)
	}
	db := filepath.Join(dir, "memory.db")
	direct := openDirect(b, db)
	// part: 100,000 rows of about 1 KB (100 MB); big fills the rest.
	fill := mb - 100
	if _, err := direct.Exec(fmt.Sprintf(`PRAGMA journal_mode=WAL;
		CREATE TABLE part(id INTEGER PRIMARY KEY, payload BLOB);
		CREATE TABLE big(id INTEGER PRIMARY KEY, b BLOB);
		INSERT INTO part SELECT x, randomblob(1000) FROM (WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM s LIMIT 100000) SELECT x FROM s);
		INSERT INTO big SELECT x, randomblob(4000) FROM (WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM s LIMIT %d) SELECT x FROM s);
		PRAGMA wal_checkpoint(TRUNCATE)`, fill<<20/4096)); err != nil {
		b.Fatal(err)
	}
	var deleted int64
	if err := direct.QueryRow("SELECT sum(length(payload) + 8) FROM part WHERE id % 10 = 0").Scan(&deleted); err != nil {
		b.Fatal(err)
	}
	direct.Close()
	undoSrv := start(b, db, "--standby-workers", "1")
	noneSrv := start(b, db, "--standby-workers", "1", "--snapshots", "0")
	fullSrv := start(b, db, "--standby-workers", "1", "--snapshots", "1", "--snapshot-mode", "full", "--snapshot-dir", filepath.Join(dir, "full"))
	time.Sleep(200 * time.Millisecond)

	var withUndo, without, full, apply time.Duration
	var recordBytes int64
	var records []string
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		text := undoSrv.ok("destructive_query", map[string]any{"query": fmt.Sprintf("DELETE FROM big WHERE id = %d", 2*i+1), "reason": "bench"})
		withUndo += time.Since(t0)
		path, ok := strings.CutPrefix(text, "ok: 1 rows affected; snapshot: ")
		if !ok || !strings.HasSuffix(path, ".undo.db") {
			b.Fatalf("answer %q", text)
		}
		records = append(records, path)
		t0 = time.Now()
		if text := noneSrv.ok("destructive_query", map[string]any{"query": fmt.Sprintf("DELETE FROM big WHERE id = %d", 2*i+2), "reason": "bench"}); text != "ok: 1 rows affected; snapshots are disabled" {
			b.Fatalf("answer %q", text)
		}
		without += time.Since(t0)
		t0 = time.Now()
		if text := fullSrv.ok("destructive_query", map[string]any{"query": fmt.Sprintf("DELETE FROM big WHERE id = %d", 100000+i), "reason": "bench"}); !strings.HasSuffix(text, "Z.db") {
			b.Fatalf("answer %q", text)
		}
		full += time.Since(t0)
		fi, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		recordBytes = max(recordBytes, fi.Size())
	}
	b.StopTimer()
	for _, r := range records {
		t0 := time.Now()
		if _, err := applyUndo(b, db, r, false); err != nil {
			b.Fatal(err)
		}
		apply += time.Since(t0)
	}
	n := float64(b.N)
	b.ReportMetric(float64(withUndo.Microseconds())/n/1000, "undo-ms/delete")
	b.ReportMetric(float64(without.Microseconds())/n/1000, "nosnap-ms/delete")
	b.ReportMetric(float64(withUndo)/float64(without), "undo/nosnap")
	b.ReportMetric(float64(full.Microseconds())/n/1000, "full-ms/delete")
	b.ReportMetric(float64(full)/float64(without), "full/nosnap")
	b.ReportMetric(float64(recordBytes)/1024, "record-KiB")
	b.ReportMetric(float64(apply.Microseconds())/n/1000, "apply-ms/record")

	// 10% of the 100 MB table, once.
	t0 := time.Now()
	text := undoSrv.ok("destructive_query", map[string]any{"query": "DELETE FROM part WHERE id % 10 = 0", "reason": "bench"})
	tenth := time.Since(t0)
	path, ok := strings.CutPrefix(text, "ok: 10000 rows affected; snapshot: ")
	if !ok {
		b.Fatalf("answer %q", text)
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	t0 = time.Now()
	if _, err := applyUndo(b, db, path, false); err != nil {
		b.Fatal(err)
	}
	tenthApply := time.Since(t0)
	t0 = time.Now()
	if text := noneSrv.ok("destructive_query", map[string]any{"query": "DELETE FROM part WHERE id % 10 = 1", "reason": "bench"}); !strings.HasPrefix(text, "ok: 10000 rows affected") {
		b.Fatalf("answer %q", text)
	}
	b.ReportMetric(float64(time.Since(t0).Milliseconds()), "tenth-nosnap-ms")
	b.ReportMetric(float64(tenth.Milliseconds()), "tenth-delete-ms")
	b.ReportMetric(float64(fi.Size())/float64(deleted), "tenth-record/deleted")
	b.ReportMetric(float64(tenthApply.Milliseconds()), "tenth-apply-ms")

	// The restore command on one more one-row record, servers stopped:
	// what a person waits for, and its safety record's size (an undo
	// record of the restore, where it used to be a copy of the file).
	text = undoSrv.ok("destructive_query", map[string]any{"query": "DELETE FROM big WHERE id = (SELECT max(id) FROM big)", "reason": "bench"})
	path, ok = strings.CutPrefix(text, "ok: 1 rows affected; snapshot: ")
	if !ok {
		b.Fatalf("answer %q", text)
	}
	for _, s := range []*session{undoSrv, noneSrv, fullSrv} {
		s.c.Close()
	}
	t0 = time.Now()
	out := restoreOK(b, "--db", db, path)
	restoreTime := time.Since(t0)
	sfi, err := os.Stat(safetyOf(b, out))
	if err != nil {
		b.Fatalf("the restore's safety snapshot: %v\n%s", err, out)
	}
	b.ReportMetric(float64(restoreTime.Milliseconds()), "restore-ms")
	b.ReportMetric(float64(sfi.Size())/1024, "restore-safety-KiB")
}
