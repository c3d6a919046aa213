package rawsqlite

import (
	"errors"
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
