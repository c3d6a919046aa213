package rawsqlite

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestStopOnAllocationFailure: with the watch on, an accumulator over an
// endless input stops at the heap limit with ErrStoppedAtHeapLimit (without
// it, it would step until interrupted); statements within the limit, also
// large ones, run as before; a new watch forgets an old failure.
func TestStopOnAllocationFailure(t *testing.T) {
	if !MemStatsEnabled() {
		t.Fatal("memory statistics are off, the heap limit cannot work")
	}
	c, _ := openTemp(t)
	prev := SetHardHeapLimit(32 << 20)
	defer SetHardHeapLimit(prev)
	if err := c.StopOnAllocationFailure(1000); err != nil {
		t.Fatal(err)
	}
	// The test's own bound, so that a broken watch fails instead of hanging.
	timer := time.AfterFunc(60*time.Second, c.Interrupt)
	defer timer.Stop()

	endless := "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
	for _, bomb := range []string{
		endless + "SELECT length(group_concat(printf('%.1000c', 'x'))) FROM c",
		endless + "SELECT length(json_group_array(printf('%.1000c', 'x'))) FROM c",
	} {
		ResetAllocationWatch()
		if AllocationFailed() {
			t.Fatal("AllocationFailed right after ResetAllocationWatch")
		}
		err := runAll(c, bomb)
		if !errors.Is(err, ErrStoppedAtHeapLimit) {
			t.Fatalf("%s: %v, want ErrStoppedAtHeapLimit", bomb, err)
		}
		if !AllocationFailed() {
			t.Error("AllocationFailed is false after the stop")
		}
	}
	ResetAllocationWatch()
	// 10 MB strings and a 4 MB group_concat fit in 32 MB: no stop.
	for _, ok := range []string{
		"SELECT length(printf('%.10000000c', 'x'))",
		"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 4000) SELECT length(group_concat(printf('%.1000c', 'x'))) FROM c",
	} {
		if err := runAll(c, ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	if AllocationFailed() {
		t.Error("AllocationFailed after statements within the limit")
	}
	// A plain interrupt is still an interrupt.
	c.Interrupt()
	timerless := endless + "SELECT count(*) FROM c"
	go func() { time.Sleep(50 * time.Millisecond); c.Interrupt() }()
	if err := runAll(c, timerless); errors.Is(err, ErrStoppedAtHeapLimit) {
		t.Errorf("an interrupted count: %v", err)
	} else {
		wantCode(t, err, ResultInterrupt)
	}
	if err := c.StopOnAllocationFailure(0); err != nil {
		t.Fatal(err)
	}
}

// TestMemoryHighMark: the watch calls the mark's hook once when SQLite's
// memory in use reaches the mark, or when a statement meets the heap limit
// (stopped by the watch, or failing on its own between two checks), and
// not for statements that stay below both.
func TestMemoryHighMark(t *testing.T) {
	c, _ := openTemp(t)
	prev := SetHardHeapLimit(32 << 20)
	defer SetHardHeapLimit(prev)
	if err := c.StopOnAllocationFailure(1000); err != nil {
		t.Fatal(err)
	}
	defer SetMemoryHighMark(0, nil)
	timer := time.AfterFunc(60*time.Second, c.Interrupt)
	defer timer.Stop()

	const bomb = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT length(group_concat(printf('%.1000c', 'x'))) FROM c"
	tests := []struct {
		name     string
		mark     int64
		sql      string
		wantErr  bool
		wantUsed int64 // the least in use the hook must see; -1: no call
	}{
		// A mark below the limit: group_concat passes it on its way
		// there.
		{"bomb passes the mark", 16 << 20, bomb, true, 16 << 20},
		// A mark above the limit: the stop at the limit calls it.
		{"bomb stopped at the limit", 1 << 40, bomb, true, 0},
		// One allocation over the limit fails inside one instruction,
		// before any check of the watch.
		{"one huge value", 1 << 40, "SELECT length(printf('%.40000000c', 'x'))", true, 0},
		{"within the limit and below the mark", 16 << 20, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 4000) SELECT length(group_concat(printf('%.1000c', 'x'))) FROM c", false, -1},
		{"no mark", 0, bomb, true, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ResetAllocationWatch()
			var calls []int64
			SetMemoryHighMark(tt.mark, func(used int64) { calls = append(calls, used) })
			err := runAll(c, tt.sql)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want one: %v", err, tt.wantErr)
			}
			if tt.wantErr {
				wantCode(t, err, ResultNoMem)
			}
			switch {
			case tt.wantUsed < 0 && len(calls) != 0:
				t.Fatalf("hook called %v", calls)
			case tt.wantUsed >= 0 && (len(calls) != 1 || calls[0] < tt.wantUsed):
				t.Fatalf("hook called %v, want once with at least %d", calls, tt.wantUsed)
			}
			// Fired once per watch: a second bomb is not told again.
			if len(calls) == 1 {
				_ = runAll(c, bomb)
				if len(calls) != 1 {
					t.Fatalf("hook called again: %v", calls)
				}
			}
		})
	}
}

// BenchmarkAllocationWatch is the watch's cost on a statement of many
// instructions (a million-row count), with a mark far above what it uses,
// so that every check reads SQLite's memory in use: every 10,000
// instructions as the worker checks, and every 100 to magnify a check.
func BenchmarkAllocationWatch(b *testing.B) {
	c, _ := openTemp(b)
	defer SetMemoryHighMark(0, nil)
	const count = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000) SELECT count(*) FROM c"
	for _, every := range []int{10000, 100} {
		b.Run(fmt.Sprintf("every=%d", every), func(b *testing.B) {
			if err := c.StopOnAllocationFailure(every); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				ResetAllocationWatch()
				SetMemoryHighMark(1<<40, func(int64) { b.Fatal("mark reached") })
				if err := runAll(c, count); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
