//go:build testhold

package ipc

import (
	"fmt"
	"os"
)

// The hold is built only with -tags testhold (tests/main_test.go and
// .ci/windows.sh build the servers the end-to-end tests run that way); a
// shipped binary has testhold_off.go, so no environment variable can make
// it block.
//
// holdFile is for one end-to-end test (tests/TestNoWorkerOutsideItsJob):
// when MCP_SQLITE_TEST_HOLD_SPAWN names a file, the spawner writes there
// the pid of each worker it creates and then stops for good at the point
// where that worker exists but has not run (on Windows: created suspended,
// not yet resumed or, on the fallback path, not yet in its Job Object).
// The test kills the server there and requires every worker to be gone.
var holdFile = os.Getenv("MCP_SQLITE_TEST_HOLD_SPAWN")

func holdForTest(pid int) {
	if holdFile == "" {
		return
	}
	f, err := os.OpenFile(holdFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err == nil {
		fmt.Fprintln(f, pid)
		f.Close()
	}
	select {}
}
