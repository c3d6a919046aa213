package worker

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"
)

// envLimitChild makes the test binary, re-run by TestSettleOSMemoryLimit,
// the process that limits itself: an address-space limit would also bind
// every other test of this process.
const envLimitChild = "MCP_SQLITE_TEST_LIMIT_CHILD"

// TestSettleOSMemoryLimit: under a limit set with room to spare, as a
// standby's is, the measured free address space is what /proc says, and
// settling leaves exactly the budget past what is mapped, whatever was
// mapped in between.
func TestSettleOSMemoryLimit(t *testing.T) {
	if os.Getenv(envLimitChild) == "1" {
		limitChild()
		return
	}
	t.Parallel()
	for _, grow := range []int{0, 96} {
		t.Run(fmt.Sprintf("grown %d MiB", grow), func(t *testing.T) {
			t.Parallel()
			// The child checks what is left right after settling; a thread
			// the runtime starts in between (its stack) is counted against
			// it, as in a worker. Such a child tries again, at most twice;
			// a settle that leaves the wrong room fails every time.
			var out []byte
			var err error
			for try := 1; try <= 3; try++ {
				cmd := exec.Command(os.Args[0], "-test.run=^TestSettleOSMemoryLimit$", "-test.count=1")
				// As the front starts workers with a budget (ipc.WorkerEnv).
				cmd.Env = append(os.Environ(), envLimitChild+"=1", "GROW_MB="+strconv.Itoa(grow), "MALLOC_ARENA_MAX=1")
				out, err = cmd.CombinedOutput()
				if err == nil && strings.Contains(string(out), "settled ok") {
					return
				}
				t.Logf("try %d: %v\n%s", try, err, out)
			}
			t.Fatalf("child: %v\n%s", err, out)
		})
	}
}

// limitChild runs in the re-run test binary: it limits itself as a standby
// does (margin 256 MiB), maps GROW_MB more, settles at 100 MiB and checks
// the room left against /proc. It prints what it found and exits.
func limitChild() {
	fail := func(format string, a ...any) {
		fmt.Printf(format+"\n", a...)
		os.Exit(1)
	}
	base, err := mappedBytes()
	if err != nil {
		fail("mapped: %v", err)
	}
	if err := setLimit(unix.RLIMIT_AS, base+356<<20); err != nil {
		fail("setrlimit: %v", err)
	}
	grow, _ := strconv.Atoi(os.Getenv("GROW_MB"))
	if grow > 0 {
		if _, err := unix.Mmap(-1, 0, grow<<20, unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANON|unix.MAP_NORESERVE); err != nil {
			fail("grow: %v", err)
		}
	}
	var lim unix.Rlimit
	_ = unix.Getrlimit(unix.RLIMIT_AS, &lim)
	now, _ := mappedBytes()
	free := addressSpaceFree(lim.Cur)
	if d := int64(lim.Cur-now) - int64(free); d < -1<<20 || d > 1<<20 {
		fail("free %d, /proc says %d", free, lim.Cur-now)
	}
	if err := settleOSMemoryLimit(100, hclog.NewNullLogger()); err != nil {
		fail("settle: %v", err)
	}
	_ = unix.Getrlimit(unix.RLIMIT_AS, &lim)
	now, _ = mappedBytes()
	if left := int64(lim.Cur) - int64(now); left < 99<<20 || left > 100<<20 {
		fail("after settling at 100 MiB, %d bytes (%d MiB) are left", left, left>>20)
	}
	// Settling again at a smaller budget lowers it; at a larger one it
	// cannot raise it, and says so in the log only.
	if err := settleOSMemoryLimit(50, hclog.NewNullLogger()); err != nil {
		fail("settle 50: %v", err)
	}
	_ = unix.Getrlimit(unix.RLIMIT_AS, &lim)
	now, _ = mappedBytes()
	if left := int64(lim.Cur) - int64(now); left < 49<<20 || left > 50<<20 {
		fail("after settling at 50 MiB, %d MiB are left", left>>20)
	}
	fmt.Println("settled ok")
	os.Exit(0)
}
