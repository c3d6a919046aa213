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
// is set plus the budget plus [ipc.AddressSpaceMarginMB]: the runtime goes
// on mapping (thread stacks, malloc arenas) after that, by an amount that
// depends on the machine's load. [settleOSMemoryLimit] then trims it, once
// the request is in, to exactly mb MiB past what is mapped then.
//
// A worker the front started confined cannot read /proc/self: the front
// sets its limit, the same way, once the worker says it is ready and before
// it sends the request. Such a worker only checks, with the request, that
// the limit is there.
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
	return setLimit(unix.RLIMIT_AS, asBase+uint64(mb+ipc.AddressSpaceMarginMB)<<20)
}

// settleOSMemoryLimit lowers RLIMIT_AS, right before the statement runs, so
// that mb MiB of address space are left (to within a MiB, never more):
// what the worker mapped since the limit was set (under load, new threads)
// comes out of the margin, not out of the budget. The room left is
// measured, not read from /proc (a confined worker cannot), by the largest
// PROT_NONE reservation the kernel grants. When less than mb is left (more
// growth than the margin), the limit stays and the log says how much the
// statement has.
func settleOSMemoryLimit(mb int, log hclog.Logger) error {
	var cur unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_AS, &cur); err != nil {
		return err
	}
	if cur.Cur == unix.RLIM_INFINITY {
		return nil
	}
	want := uint64(mb) << 20
	free, ok := addressSpaceFreeAbove(want, cur.Cur)
	if !ok {
		free = addressSpaceFree(cur.Cur)
		log.Warn("the statement has less address space than its memory budget: the worker mapped more than the margin while it waited",
			"memory_mb", mb, "free_mb", free>>20, "margin_mb", ipc.AddressSpaceMarginMB)
		return nil
	}
	limit := cur.Cur - (free - want)
	if err := setLimit(unix.RLIMIT_AS, limit); err != nil {
		return err
	}
	log.Debug("address-space limit settled", "memory_mb", mb, "trimmed_mb", (free-want)>>20, "rlimit_as", limit)
	return nil
}

// addressSpaceFreeAbove returns, when at least want bytes can be mapped
// under an RLIMIT_AS of limit, how many can, rounded up to a MiB (so that
// trimming by it never leaves more than want); ok is false when want
// cannot be. It runs on every request, so it searches whole MiB above
// want (first the margin's worth, where the answer usually is): about 11
// reservations, where a search in pages over the whole limit took 20.
func addressSpaceFreeAbove(want, limit uint64) (free uint64, ok bool) {
	const mib = 1 << 20
	if !canReserve(want) {
		return 0, false
	}
	lo := want / mib // whole MiB that fit
	hi := lo + ipc.AddressSpaceMarginMB
	if canReserve(hi * mib) {
		lo, hi = hi, limit/mib
	} else {
		hi--
	}
	for lo < hi { // lo fits; more than hi does not
		mid := lo + (hi-lo+1)/2
		if canReserve(mid * mib) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	if lo*mib == want {
		return want, true
	}
	return (lo + 1) * mib, true
}

// addressSpaceFree is how many bytes this process may still map under an
// RLIMIT_AS of limit: a binary search, in pages, for the largest
// reservation that succeeds. A reservation is PROT_NONE and NORESERVE (it
// costs no memory) and unmapped at once; raw system calls keep the
// scheduler from starting a thread (which would map) in the middle.
func addressSpaceFree(limit uint64) uint64 {
	page := uint64(unix.Getpagesize())
	lo, hi := uint64(0), limit/page // lo pages fit; more than hi cannot
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if canReserve(mid * page) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo * page
}

// canReserve reports whether n bytes of address space can be mapped now.
func canReserve(n uint64) bool {
	addr, _, e := unix.RawSyscall6(unix.SYS_MMAP, 0, uintptr(n), unix.PROT_NONE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE, ^uintptr(0), 0)
	if e != 0 {
		return false
	}
	_, _, _ = unix.RawSyscall(unix.SYS_MUNMAP, addr, uintptr(n), 0)
	return true
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
