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

// asBase is the address space mapped when the memory limit was first set.
var asBase uint64

func setLimit(res int, v uint64) error {
	return unix.Setrlimit(res, &unix.Rlimit{Cur: v, Max: v})
}

// applyProcessLimits sets RLIMIT_CORE=0 and RLIMIT_NOFILE, and makes sure
// the worker dies if the front (frontPID, 0 if it did not say) already has.
func applyProcessLimits(frontPID int, _ hclog.Logger) error {
	if frontGone(frontPID) {
		// The front died before Pdeathsig was armed.
		os.Exit(3)
	}
	// Past RLIMIT_FSIZE a write must fail (SQLite reports an I/O error),
	// not kill the worker with SIGXFSZ.
	signal.Ignore(syscall.SIGXFSZ)
	if err := setLimit(unix.RLIMIT_CORE, 0); err != nil {
		return err
	}
	return setLimit(unix.RLIMIT_NOFILE, maxOpenFiles)
}

// applyOSMemoryLimit sets RLIMIT_AS. The Go runtime reserves about 1 GiB
// of PROT_NONE address space at start, which RLIMIT_AS counts although it
// holds no memory. The limit is therefore what is mapped the first time it
// is set plus the budget: the statement can make the worker grow by at most
// mb. A later, smaller budget lowers it from the same base.
//
// A worker the front started confined cannot read /proc/self: the front
// sets its limit, the same way, once the worker says it is ready and before
// it sends the request. Such a worker only checks, with the request, that
// the limit is there, and lowers it for a smaller budget.
func applyOSMemoryLimit(mb int, _ hclog.Logger) error {
	if sandboxState.Report.Launched {
		var cur unix.Rlimit
		if err := unix.Getrlimit(unix.RLIMIT_AS, &cur); err != nil {
			return err
		}
		switch {
		case limited.memoryMB == 0:
			return nil // the standby phase: the front sets it next
		case cur.Cur == unix.RLIM_INFINITY:
			return errors.New("the server did not set this worker's address-space limit")
		case mb < limited.memoryMB:
			return setLimit(unix.RLIMIT_AS, cur.Cur-uint64(limited.memoryMB-mb)<<20)
		}
		return nil
	}
	if asBase == 0 {
		base, err := mappedBytes()
		if err != nil {
			return err
		}
		asBase = base
	}
	return setLimit(unix.RLIMIT_AS, asBase+uint64(mb)<<20)
}

// applyFileLimit sets RLIMIT_FSIZE from the database's size now.
func applyFileLimit(req *ipc.Request, log hclog.Logger) error {
	if req.Limits.MaxGrowthMB <= 0 {
		return nil
	}
	fi, err := os.Stat(req.DB)
	if err != nil {
		// The open reports a missing database with its own code.
		return nil
	}
	// Room for the file's growth cap, its WAL and one snapshot copy.
	limit := uint64(fi.Size())*2 + uint64(req.Limits.MaxGrowthMB)<<21 + 64<<20
	if err := setLimit(unix.RLIMIT_FSIZE, limit); err != nil {
		return err
	}
	limited.fileBytes = limit
	log.Debug("file size limit applied", "max_growth_mb", req.Limits.MaxGrowthMB, "fsize", limit)
	return nil
}

// frontGone reports whether the process that started this worker is no
// longer its parent: the front's pid when it said it, else whether the
// worker was handed to init.
func frontGone(frontPID int) bool {
	if frontPID != 0 {
		return os.Getppid() != frontPID
	}
	return os.Getppid() == 1
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

// pastFileLimit reports whether a failed write's errno says it met
// RLIMIT_FSIZE (SIGXFSZ is ignored, so the write fails with EFBIG).
func pastFileLimit(errno int) bool {
	return limited.fileBytes > 0 && syscall.Errno(errno) == syscall.EFBIG
}
