package worker

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
)

// maxOpenFiles covers the database, its journal, WAL and SHM, a snapshot and
// what the Go runtime keeps open.
const maxOpenFiles = 64

// applyOSLimits sets RLIMIT_AS (memory), RLIMIT_FSIZE (largest file it may
// write), RLIMIT_NOFILE and RLIMIT_CORE=0, and makes sure the worker dies
// if the front already has.
func applyOSLimits(req *ipc.Request, log hclog.Logger) error {
	if os.Getppid() == 1 {
		// The front died before Pdeathsig was armed.
		os.Exit(3)
	}
	// Past RLIMIT_FSIZE a write must fail (SQLite reports an I/O error),
	// not kill the worker with SIGXFSZ.
	signal.Ignore(syscall.SIGXFSZ)
	set := func(res int, v uint64) error {
		return unix.Setrlimit(res, &unix.Rlimit{Cur: v, Max: v})
	}
	if err := set(unix.RLIMIT_CORE, 0); err != nil {
		return err
	}
	if err := set(unix.RLIMIT_NOFILE, maxOpenFiles); err != nil {
		return err
	}
	if mb := req.Limits.MemoryMB; mb > 0 {
		// The Go runtime reserves about 1 GiB of PROT_NONE address space at
		// start, which RLIMIT_AS counts although it holds no memory. The
		// limit is therefore what is mapped now plus the budget: the
		// statement can make the worker grow by at most MemoryMB.
		base, err := mappedBytes()
		if err != nil {
			return err
		}
		if err := set(unix.RLIMIT_AS, base+uint64(mb)<<20); err != nil {
			return err
		}
	}
	if fi, err := os.Stat(req.DB); err == nil && req.Limits.MaxGrowthMB > 0 {
		// Room for the file's growth cap, its WAL and one snapshot copy.
		limit := uint64(fi.Size())*2 + uint64(req.Limits.MaxGrowthMB)<<21 + 64<<20
		if err := set(unix.RLIMIT_FSIZE, limit); err != nil {
			return err
		}
	}
	log.Debug("limits applied", "memory_mb", req.Limits.MemoryMB, "max_growth_mb", req.Limits.MaxGrowthMB)
	return nil
}

// mappedBytes is this process's virtual size (VmSize) from /proc.
func mappedBytes() (uint64, error) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmSize:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse VmSize %q: %w", rest, err)
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("no VmSize in /proc/self/status")
}
