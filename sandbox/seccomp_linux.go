//go:build linux && (amd64 || arm64)

package sandbox

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"
)

// check is what the filter does with one system call of the table.
type check int

const (
	permit     check = iota // run it
	refuse                  // EPERM
	notHere                 // ENOSYS: "not here", so the caller falls back
	fatal                   // end the process (SIGSYS)
	noExec                  // mmap, mprotect: not with PROT_EXEC
	threadOnly              // clone: CLONE_THREAD set, no namespace flag
	ownPID                  // kill, tgkill: this process only
	ownLimits               // prlimit64: this process only
	ttyQuery                // ioctl: TCGETS only
	vmaName                 // prctl: PR_SET_VMA only (the runtime names its mappings)
)

// rule is one line of syscallTable.
type rule struct {
	nr    int
	check check
}

// Namespace flags a thread never needs (CLONE_NEWTIME is not among them:
// clone's low byte is the exit signal, where that bit sits).
const namespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET

// Offsets in struct seccomp_data; an argument's low 32 bits come first on
// both little-endian architectures.
const (
	offNR   = 0
	offArch = 4
	offArgs = 16
)

func argLow(i int) uint32 { return uint32(offArgs + 8*i) }

// actions are the return values of one filter.
type actions struct {
	kill    uint32 // execve, ptrace, a foreign architecture
	miss    uint32 // a call the table does not list
	pid     uint32 // this process, for ownPID and ownLimits
	x32Kill bool   // amd64: x32 system calls are a foreign ABI
}

const (
	retAllow = unix.SECCOMP_RET_ALLOW
	retEPERM = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
)

func stmt(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }

func jump(code uint16, k uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k}
}

func ret(k uint32) unix.SockFilter { return stmt(unix.BPF_RET|unix.BPF_K, k) }

func load(off uint32) unix.SockFilter { return stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, off) }

const (
	jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	jge  = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
	jset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
	ja   = unix.BPF_JMP | unix.BPF_JA
)

// buildFilter compiles table into a classic BPF program: the architecture
// first (anything else is killed), then a binary search on the system call
// number, whose leaves hold each call's check inline.
func buildFilter(arch uint32, table []rule, act actions) ([]unix.SockFilter, error) {
	rules := slices.DeleteFunc(slices.Clone(table), func(r rule) bool { return r.nr < 0 })
	slices.SortFunc(rules, func(a, b rule) int { return a.nr - b.nr })
	for i := 1; i < len(rules); i++ {
		if rules[i].nr == rules[i-1].nr {
			return nil, fmt.Errorf("sandbox: system call %d twice in the table", rules[i].nr)
		}
	}
	prog := make([]unix.SockFilter, 0, 256)
	prog = append(prog,
		load(offArch),
		jump(jeq, arch, 1, 0),
		ret(act.kill),
		load(offNR),
	)
	if act.x32Kill {
		// x32 calls are the x86-64 numbers with bit 30 set.
		prog = append(prog, jump(jge, 0x40000000, 0, 1), ret(act.kill))
	}
	prog = searchTree(prog, rules, act)
	if len(prog) > 4096 { // BPF_MAXINSNS
		return nil, fmt.Errorf("sandbox: the seccomp filter has %d instructions, more than the kernel takes", len(prog))
	}
	return prog, nil
}

// leafSize is how many calls a leaf of the search compares one by one.
const leafSize = 8

// searchTree appends to out the search for the accumulator's system call
// number among rules (sorted). Every path ends in a return, so a check may
// reuse the accumulator. A leaf compares its calls in turn; the plain
// allowed ones share the leaf's one "allow" return. Both keep the cost
// down, paid at every worker start: the kernel's JIT time grows with the
// program's length, and the build appends into one slice.
func searchTree(out []unix.SockFilter, rules []rule, act actions) []unix.SockFilter {
	if len(rules) <= leafSize {
		var toAllow [leafSize]int // jumps to point at the shared allow
		n := 0
		for _, r := range rules {
			if r.check == permit {
				toAllow[n], n = len(out), n+1
				out = append(out, jump(jeq, uint32(r.nr), 0, 0))
				continue
			}
			at := len(out)
			out = checkBlock(append(out, jump(jeq, uint32(r.nr), 0, 0)), r.check, act)
			out[at].Jf = uint8(len(out) - at - 1)
		}
		out = append(out, ret(act.miss), ret(retAllow))
		for _, i := range toAllow[:n] {
			out[i].Jt = uint8(len(out) - 1 - i - 1)
		}
		return out
	}
	mid := len(rules) / 2
	// Below the middle: skip the long jump into the upper half.
	out = append(out, jump(jge, uint32(rules[mid].nr), 0, 1), stmt(ja, 0))
	over := len(out) - 1
	out = searchTree(out, rules[:mid], act)
	out[over].K = uint32(len(out) - over - 1)
	return searchTree(out, rules[mid:], act)
}

// checkBlock appends the code for one call once its number matched. A call
// whose arguments fail its check gets act.miss, like an unlisted one.
func checkBlock(out []unix.SockFilter, c check, act actions) []unix.SockFilter {
	switch c {
	case permit:
		return append(out, ret(retAllow))
	case refuse:
		return append(out, ret(retEPERM))
	case notHere:
		return append(out, ret(unix.SECCOMP_RET_ERRNO|uint32(unix.ENOSYS)))
	case fatal:
		return append(out, ret(act.kill))
	case noExec: // prot is the third argument of mmap and mprotect
		return append(out, load(argLow(2)), jump(jset, unix.PROT_EXEC, 0, 1), ret(act.miss), ret(retAllow))
	case threadOnly:
		return append(out,
			load(argLow(0)),
			jump(jset, unix.CLONE_THREAD, 0, 2),
			jump(jset, namespaceFlags, 1, 0),
			ret(retAllow),
			ret(act.miss),
		)
	case ownPID:
		return append(out, load(argLow(0)), jump(jeq, act.pid, 0, 1), ret(retAllow), ret(act.miss))
	case ownLimits: // pid 0 is the caller
		return append(out, load(argLow(0)), jump(jeq, 0, 1, 0), jump(jeq, act.pid, 0, 1), ret(retAllow), ret(act.miss))
	case ttyQuery:
		return append(out, load(argLow(1)), jump(jeq, unix.TCGETS, 0, 1), ret(retAllow), ret(act.miss))
	case vmaName:
		return append(out, load(argLow(0)), jump(jeq, unix.PR_SET_VMA, 0, 1), ret(retAllow), ret(act.miss))
	}
	panic(fmt.Sprintf("sandbox: unknown seccomp check %d", c))
}

// seccompKill is the action for the calls that must never be tried:
// SECCOMP_RET_KILL_PROCESS (Linux 4.14+), else EPERM, which still refuses.
func seccompKill() (uint32, error) {
	action := uint32(unix.SECCOMP_RET_KILL_PROCESS)
	_, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&action)))
	switch e {
	case 0:
		return unix.SECCOMP_RET_KILL_PROCESS, nil
	case unix.EOPNOTSUPP:
		return retEPERM, nil
	case unix.ENOSYS, unix.EINVAL:
		return 0, fmt.Errorf("%w (%v); workers run without a system call allowlist", ErrNoSeccomp, e)
	}
	// EPERM: a container's own filter forbids installing one.
	return 0, fmt.Errorf("%w: seccomp() is refused here (%v); workers run without a system call allowlist", ErrNoSeccomp, e)
}

// SeccompSupported reports whether workers here get the system call
// allowlist: nil if they do; an error wrapping ErrNoSeccomp where the
// kernel lacks seccomp (workers run on without it, and the front says so
// once); any other error means workers refuse to run confined.
func SeccompSupported() error {
	_, err := seccompKill()
	return err
}

// RestrictSyscalls installs the worker's system call allowlist on every
// thread of the process (SECCOMP_FILTER_FLAG_TSYNC), for good. The
// process must already have no_new_privs. It fails with an error wrapping
// ErrNoSeccomp where the kernel has no seccomp filters.
func RestrictSyscalls() error {
	k, err := seccompKill()
	if err != nil {
		return err
	}
	prog, err := buildFilter(auditArch, syscallTable, actions{kill: k, miss: missAction, pid: uint32(os.Getpid()), x32Kill: x32Kill})
	if err != nil {
		return err
	}
	// no_new_privs is what lets an unprivileged process install a filter;
	// the caller's thread must have it, and TSYNC spreads the filter.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	nnp, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
	if err != nil || nnp != 1 {
		return fmt.Errorf("sandbox: seccomp filter without no_new_privs (%d, %v)", nnp, err)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	r, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	switch {
	case e != 0:
		return fmt.Errorf("sandbox: install the seccomp filter: %w", e)
	case r != 0:
		return fmt.Errorf("sandbox: install the seccomp filter: thread %d could not take it", r)
	}
	return nil
}
