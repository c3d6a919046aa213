package ipc

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// The standby handshake includes the worker's system call allowlist: a
// worker says it is ready only once its seccomp filter is in place, and
// the front checks that in the worker's /proc status before it hands it a
// request (sandbox/DESIGN.md). A worker that confined itself without the
// filter (an older binary) never serves.

// seccompStatus reads the Seccomp mode and the number of filters
// (Seccomp_filters, Linux 5.9+; -1 where the kernel does not say) of pid,
// 0 for this process.
func seccompStatus(pid int) (mode string, filters int, err error) {
	who := "self"
	if pid != 0 {
		who = strconv.Itoa(pid)
	}
	status, err := os.ReadFile("/proc/" + who + "/status")
	if err != nil {
		return "", 0, err
	}
	filters = -1
	for _, line := range strings.Split(string(status), "\n") {
		key, val, _ := strings.Cut(line, ":")
		switch key {
		case "Seccomp":
			mode = strings.TrimSpace(val)
		case "Seccomp_filters":
			filters, _ = strconv.Atoi(strings.TrimSpace(val))
		}
	}
	return mode, filters, nil
}

// checkSeccomp returns nil when worker pid runs under a seccomp filter of
// its own: mode 2, and one filter more than the front (whose filters, a
// container's for instance, every child inherits).
func checkSeccomp(pid, frontFilters int) error {
	mode, filters, err := seccompStatus(pid)
	switch {
	case err != nil:
		return err
	case mode != "2":
		return fmt.Errorf("the worker shows Seccomp: %s in its /proc status, not 2: it did not install its system call allowlist (a worker binary older than its server?)", mode)
	case frontFilters >= 0 && filters <= frontFilters:
		return fmt.Errorf("the worker has %d seccomp filters, the server %d: it did not install its own system call allowlist", filters, frontFilters)
	}
	return nil
}
