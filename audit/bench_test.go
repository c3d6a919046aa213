package audit

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkAudit measures what a call that comes at once after another
// waits for the earlier call's audit row (Queue.Audit queues it, the reply
// goes out, the next call's AwaitAudit waits until it is written, at most
// auditSettle). One op is one call from one caller, so every row is a batch
// of one and pays one sync (synchronous=FULL, what the server runs):
// ms/audit. Beside it, in the same run, the same calls on a store with
// synchronous=NORMAL: normal-ms/audit, and full-vs-normal.
func BenchmarkAudit(b *testing.B) {
	ctx := context.Background()
	entry := Entry{Session: "20260101T000000Z-beef", Tool: "read_query", Query: sql.NullString{String: "SELECT 1", Valid: true}, OK: true}
	normal := openNormal(b, filepath.Join(b.TempDir(), "normal.db"))
	defer normal.Close()
	s, err := open(ctx, filepath.Join(b.TempDir(), "audit.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ResetTimer()
	for b.Loop() {
		if err := s.Audit(ctx, entry); err != nil {
			b.Fatal(err)
		}
		s.AwaitAudit()
	}
	durable := b.Elapsed().Seconds() / float64(b.N)
	b.StopTimer()
	n := max(1000, 10*b.N)
	start := time.Now()
	for range n {
		if err := normal.Audit(ctx, entry); err != nil {
			b.Fatal(err)
		}
		normal.AwaitAudit()
	}
	fast := time.Since(start).Seconds() / float64(n)
	b.ReportMetric(durable*1e3, "ms/audit")
	b.ReportMetric(fast*1e3, "normal-ms/audit")
	b.ReportMetric(durable/fast, "full-vs-normal")
}
