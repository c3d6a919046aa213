//go:build linux && (amd64 || arm64)

package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// runBPF interprets the classic BPF subset buildFilter emits over one
// seccomp_data, so that every decision of the table can be checked
// without a kernel.
func runBPF(t *testing.T, prog []unix.SockFilter, nr int, arch uint32, args [6]uint64) uint32 {
	t.Helper()
	var data [64]byte
	*(*int32)(unsafe.Pointer(&data[offNR])) = int32(nr)
	*(*uint32)(unsafe.Pointer(&data[offArch])) = arch
	for i, a := range args {
		*(*uint64)(unsafe.Pointer(&data[offArgs+8*i])) = a
	}
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			acc = *(*uint32)(unsafe.Pointer(&data[in.K]))
		case unix.BPF_RET | unix.BPF_K:
			return in.K
		case ja:
			pc += int(in.K)
		case jeq, jge, jset:
			var taken bool
			switch in.Code {
			case jeq:
				taken = acc == in.K
			case jge:
				taken = acc >= in.K
			default:
				taken = acc&in.K != 0
			}
			if taken {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		default:
			t.Fatalf("instruction %d: unknown code %#x", pc, in.Code)
		}
	}
	t.Fatal("the program ran off its end")
	return 0
}

// TestFilterDecisions runs the compiled table for every listed call and
// for the cases each check exists for.
func TestFilterDecisions(t *testing.T) {
	const pid = 4242
	const killed = unix.SECCOMP_RET_KILL_PROCESS
	prog, err := buildFilter(auditArch, syscallTable, actions{kill: killed, miss: retEPERM, pid: pid, x32Kill: x32Kill})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d rules, %d instructions", len(syscallTable), len(prog))
	enosysRet := unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	threadFlags := uint64(unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_SYSVSEM | unix.CLONE_THREAD)
	cases := []struct {
		name string
		nr   int
		args [6]uint64
		want uint32
	}{
		{"read", unix.SYS_READ, [6]uint64{}, retAllow},
		{"a thread", unix.SYS_CLONE, [6]uint64{threadFlags}, retAllow},
		{"a glibc thread", unix.SYS_CLONE, [6]uint64{threadFlags | unix.CLONE_SETTLS | unix.CLONE_PARENT_SETTID | unix.CLONE_CHILD_CLEARTID}, retAllow},
		{"fork by clone", unix.SYS_CLONE, [6]uint64{uint64(unix.SIGCHLD)}, retEPERM},
		{"Go's exec clone", unix.SYS_CLONE, [6]uint64{unix.CLONE_VM | unix.CLONE_VFORK | uint64(unix.SIGCHLD)}, retEPERM},
		{"a thread in a new user namespace", unix.SYS_CLONE, [6]uint64{threadFlags | unix.CLONE_NEWUSER}, retEPERM},
		{"a thread in a new network namespace", unix.SYS_CLONE, [6]uint64{threadFlags | unix.CLONE_NEWNET}, retEPERM},
		{"clone3", unix.SYS_CLONE3, [6]uint64{}, enosysRet},
		{"mmap rw", unix.SYS_MMAP, [6]uint64{0, 4096, unix.PROT_READ | unix.PROT_WRITE}, retAllow},
		{"mmap exec", unix.SYS_MMAP, [6]uint64{0, 4096, unix.PROT_READ | unix.PROT_EXEC}, retEPERM},
		{"mprotect exec", unix.SYS_MPROTECT, [6]uint64{0, 4096, unix.PROT_EXEC}, retEPERM},
		{"tgkill own thread", unix.SYS_TGKILL, [6]uint64{pid, 7, uint64(unix.SIGURG)}, retAllow},
		{"tgkill another process", unix.SYS_TGKILL, [6]uint64{1, 1, uint64(unix.SIGKILL)}, retEPERM},
		{"kill self", unix.SYS_KILL, [6]uint64{pid, uint64(unix.SIGQUIT)}, retAllow},
		{"kill the group", unix.SYS_KILL, [6]uint64{0, uint64(unix.SIGKILL)}, retEPERM},
		{"kill everyone", unix.SYS_KILL, [6]uint64{0xffffffffffffffff, uint64(unix.SIGKILL)}, retEPERM},
		{"prlimit self", unix.SYS_PRLIMIT64, [6]uint64{0, unix.RLIMIT_FSIZE}, retAllow},
		{"prlimit own pid", unix.SYS_PRLIMIT64, [6]uint64{pid, unix.RLIMIT_AS}, retAllow},
		{"prlimit another process", unix.SYS_PRLIMIT64, [6]uint64{1, unix.RLIMIT_AS}, retEPERM},
		{"ioctl TCGETS", unix.SYS_IOCTL, [6]uint64{0, unix.TCGETS}, retAllow},
		{"ioctl TIOCSTI", unix.SYS_IOCTL, [6]uint64{0, unix.TIOCSTI}, retEPERM},
		{"prctl PR_SET_VMA", unix.SYS_PRCTL, [6]uint64{unix.PR_SET_VMA}, retAllow},
		{"prctl PR_SET_DUMPABLE", unix.SYS_PRCTL, [6]uint64{unix.PR_SET_DUMPABLE, 1}, retEPERM},
		{"socket", unix.SYS_SOCKET, [6]uint64{unix.AF_INET, unix.SOCK_DGRAM}, retEPERM},
		{"socketpair", unix.SYS_SOCKETPAIR, [6]uint64{unix.AF_UNIX, unix.SOCK_STREAM}, retEPERM},
		{"connect", unix.SYS_CONNECT, [6]uint64{}, retEPERM},
		{"execve", unix.SYS_EXECVE, [6]uint64{}, killed},
		{"execveat", unix.SYS_EXECVEAT, [6]uint64{}, killed},
		{"ptrace", unix.SYS_PTRACE, [6]uint64{}, killed},
		{"io_uring_setup", unix.SYS_IO_URING_SETUP, [6]uint64{}, retEPERM},
		{"bpf", unix.SYS_BPF, [6]uint64{}, retEPERM},
		{"mount", unix.SYS_MOUNT, [6]uint64{}, retEPERM},
		{"keyctl", unix.SYS_KEYCTL, [6]uint64{}, retEPERM},
		{"unshare", unix.SYS_UNSHARE, [6]uint64{}, retEPERM},
		{"process_vm_writev", unix.SYS_PROCESS_VM_WRITEV, [6]uint64{}, retEPERM},
		{"perf_event_open", unix.SYS_PERF_EVENT_OPEN, [6]uint64{}, retEPERM},
		{"userfaultfd", unix.SYS_USERFAULTFD, [6]uint64{}, retEPERM},
		{"a number past the table", 1 << 20, [6]uint64{}, retEPERM},
	}
	if x32Kill {
		cases = append(cases, struct {
			name string
			nr   int
			args [6]uint64
			want uint32
		}{"x32 read", 0x40000000 | unix.SYS_READ, [6]uint64{}, killed})
	}
	for _, c := range cases {
		if got := runBPF(t, prog, c.nr, auditArch, c.args); got != c.want {
			t.Errorf("%s (%d): %#x, want %#x", c.name, c.nr, got, c.want)
		}
	}
	// Every listed call reaches its own check, whatever its place in the tree.
	for _, r := range syscallTable {
		if r.nr < 0 {
			continue
		}
		got := runBPF(t, prog, r.nr, auditArch, [6]uint64{pid, unix.TCGETS, unix.PROT_READ})
		want := map[check]uint32{permit: retAllow, refuse: retEPERM, notHere: enosysRet, fatal: killed}[r.check]
		if r.check == vmaName {
			want = retEPERM // option pid is not PR_SET_VMA
		}
		if r.check == threadOnly {
			want = retEPERM // 4242 has no CLONE_THREAD
		}
		if w, ok := map[check]uint32{noExec: retAllow, ownPID: retAllow, ownLimits: retAllow, ttyQuery: retAllow}[r.check]; ok {
			want = w // the arguments above pass these checks
		}
		if got != want {
			t.Errorf("table entry %d (check %d): %#x, want %#x", r.nr, r.check, got, want)
		}
	}
	// Another architecture's numbers mean other calls: killed, whatever the call.
	for _, arch := range []uint32{unix.AUDIT_ARCH_I386, unix.AUDIT_ARCH_ARM, unix.AUDIT_ARCH_X86_64 ^ unix.AUDIT_ARCH_AARCH64 ^ auditArch} {
		if got := runBPF(t, prog, unix.SYS_READ, arch, [6]uint64{}); got != killed {
			t.Errorf("arch %#x: %#x, want kill", arch, got)
		}
	}
}

// TestFilterRejectsDuplicates: a call listed twice is a table error.
func TestFilterRejectsDuplicates(t *testing.T) {
	_, err := buildFilter(auditArch, []rule{{unix.SYS_READ, permit}, {unix.SYS_READ, refuse}}, actions{})
	if err == nil {
		t.Fatal("a duplicate entry was accepted")
	}
}

// seccompChildEnv makes the test binary install the filter (when
// seccompFilterEnv is "1") and make the system calls named in the variable.
const (
	seccompChildEnv  = "SANDBOX_TEST_SECCOMP_CALLS" // read by TestMain
	seccompFilterEnv = "SANDBOX_TEST_SECCOMP_FILTER"
	seccompUDPEnv    = "SANDBOX_TEST_SECCOMP_UDP"
)

func init() { seccompChild = restrictedChild }

func restrictedChild(calls string) int {
	if os.Getenv(seccompFilterEnv) == "1" {
		runtime.LockOSThread()
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			fmt.Println(err)
			return 1
		}
		// No core file for the SIGSYS deaths below.
		_ = unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{})
		if err := RestrictSyscalls(); err != nil {
			fmt.Println(err)
			return 1
		}
		runtime.UnlockOSThread()
	}
	out := map[string]string{}
	for _, c := range strings.Split(calls, ",") {
		out[c] = tryCall(c)
	}
	_ = json.NewEncoder(os.Stdout).Encode(out)
	return 0
}

func errnoText(e syscall.Errno) string {
	if e == 0 {
		return "ok"
	}
	return unix.ErrnoName(e)
}

// tryCall makes one system call directly and returns "ok" or the errno's name.
func tryCall(name string) string {
	switch name {
	case "udp":
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
		if err != nil {
			return errnoText(err.(syscall.Errno))
		}
		defer unix.Close(fd)
		port, _ := strconv.Atoi(os.Getenv(seccompUDPEnv))
		if err := unix.Sendto(fd, []byte("out"), 0, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
			return errnoText(err.(syscall.Errno))
		}
		return "ok"
	case "unix":
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		if err == nil {
			unix.Close(fd)
			return "ok"
		}
		return errnoText(err.(syscall.Errno))
	case "io_uring_setup":
		var params [120]byte
		fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params)), 0)
		if e == 0 {
			unix.Close(int(fd))
		}
		return errnoText(e)
	case "bpf":
		// An unknown command: EINVAL from the kernel, EPERM from the filter.
		_, _, e := unix.Syscall(unix.SYS_BPF, 0xffff, 0, 0)
		return errnoText(e)
	case "clone3":
		_, _, e := unix.Syscall(unix.SYS_CLONE3, 0, 0, 0)
		return errnoText(e)
	case "fork":
		pid, _, e := unix.RawSyscall6(unix.SYS_CLONE, uintptr(unix.SIGCHLD), 0, 0, 0, 0, 0)
		if e == 0 && pid == 0 {
			unix.RawSyscall(unix.SYS_EXIT_GROUP, 0, 0, 0) // the child
		}
		if e == 0 {
			var ws unix.WaitStatus
			_, _ = unix.Wait4(int(pid), &ws, 0, nil)
		}
		return errnoText(e)
	case "thread":
		// Locked goroutines hold a thread each: more of them than the
		// process has threads means the runtime must clone new ones (a
		// failed clone would crash it).
		before := taskIDs()
		tids := make(chan int)
		release := make(chan struct{})
		defer close(release)
		for range len(before) + 2 {
			go func() {
				runtime.LockOSThread()
				tids <- unix.Gettid()
				<-release
			}()
		}
		fresh := 0
		for range len(before) + 2 {
			if !before[<-tids] {
				fresh++
			}
		}
		if fresh == 0 {
			return "no new thread"
		}
		return "ok"
	case "mmap_exec":
		b, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_EXEC, unix.MAP_PRIVATE|unix.MAP_ANON)
		if err != nil {
			return errnoText(err.(syscall.Errno))
		}
		_ = unix.Munmap(b)
		return "ok"
	case "kill_init":
		return errnoText(errOf(unix.Kill(1, 0)))
	case "execve":
		// A path that does not exist: ENOENT from the kernel; the filter kills first.
		return errnoText(errOf(unix.Exec("/nonexistent/program", []string{"x"}, nil)))
	case "ptrace":
		_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_ATTACH, 0x3fffffff, 0, 0, 0, 0)
		return errnoText(e)
	}
	return "unknown call"
}

func errOf(err error) syscall.Errno {
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return 0
}

// taskIDs are the ids of this process's threads now.
func taskIDs() map[int]bool {
	ids := map[int]bool{}
	entries, _ := os.ReadDir("/proc/self/task")
	for _, e := range entries {
		id, _ := strconv.Atoi(e.Name())
		ids[id] = true
	}
	return ids
}

func runSeccompChild(t *testing.T, filter bool, udpPort int, calls ...string) (map[string]string, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	on := "0"
	if filter {
		on = "1"
	}
	cmd.Env = append(withoutVars(os.Environ(), EnvAllowance, EnvConfined), seccompChildEnv+"="+strings.Join(calls, ","),
		seccompFilterEnv+"="+on, seccompUDPEnv+"="+strconv.Itoa(udpPort))
	out, err := cmd.Output()
	if err != nil {
		return nil, err
	}
	res := map[string]string{}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("child output %q: %v", out, err)
	}
	return res, nil
}

// TestRestrictSyscalls installs the real filter in a child and makes each
// call directly; the same child without the filter is the control, so
// every refusal below is the filter's.
func TestRestrictSyscalls(t *testing.T) {
	if err := SeccompSupported(); err != nil {
		t.Skip(err) // .ci/run's kernels have seccomp
	}
	udp, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	port := udp.LocalAddr().(*net.UDPAddr).Port
	calls := []struct {
		name, open, confined string
	}{
		{"udp", "ok", "EPERM"},
		{"unix", "ok", "EPERM"},
		{"io_uring_setup", "", "EPERM"}, // the control may be refused by sysctl
		{"bpf", "EINVAL", "EPERM"},
		{"clone3", "", "ENOSYS"},
		{"fork", "ok", "EPERM"},
		{"thread", "ok", "ok"},
		{"mmap_exec", "ok", "EPERM"},
		{"kill_init", "", "EPERM"},
	}
	var names []string
	for _, c := range calls {
		names = append(names, c.name)
	}
	open, err := runSeccompChild(t, false, port, names...)
	if err != nil {
		t.Fatalf("control child: %v", err)
	}
	confined, err := runSeccompChild(t, true, port, names...)
	if err != nil {
		t.Fatalf("confined child: %v", err)
	}
	for _, c := range calls {
		if c.open != "" && open[c.name] != c.open {
			t.Errorf("%s without the filter: %s, want %s", c.name, open[c.name], c.open)
		}
		if open[c.name] == c.confined && c.name != "thread" {
			t.Errorf("%s: %s with and without the filter: the test proves nothing", c.name, open[c.name])
		}
		if confined[c.name] != c.confined {
			t.Errorf("%s with the filter: %s, want %s", c.name, confined[c.name], c.confined)
		}
	}
	// The datagram of the control arrived; none came from the confined child.
	_ = udp.SetReadDeadline(time.Now().Add(time.Second))
	buf := make([]byte, 16)
	if n, _, err := udp.ReadFrom(buf); err != nil || string(buf[:n]) != "out" {
		t.Errorf("the control's datagram: %q, %v", buf[:n], err)
	}
	_ = udp.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if n, _, err := udp.ReadFrom(buf); err == nil {
		t.Errorf("a second datagram arrived: %q", buf[:n])
	}

	// execve and ptrace end the process: SIGSYS, nothing printed.
	for _, c := range []struct{ name, open string }{{"execve", "ENOENT"}, {"ptrace", "ESRCH"}} {
		if res, err := runSeccompChild(t, false, port, c.name); err != nil || res[c.name] != c.open {
			t.Errorf("%s without the filter: %v %v, want %s", c.name, res, err, c.open)
		}
		_, err := runSeccompChild(t, true, port, c.name)
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Errorf("%s with the filter: %v, want death by SIGSYS", c.name, err)
			continue
		}
		if ws := exit.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGSYS {
			t.Errorf("%s with the filter: %v, want death by SIGSYS", c.name, exit)
		}
	}
}
