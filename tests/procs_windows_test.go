package tests

// How the tests find processes on Windows: a Toolhelp snapshot of every
// process (pid, parent pid, image name) and the full image path of one.
// Windows keeps a process's parent pid after the parent exits, so the
// workers of a server are the worker processes it started, also once it
// is gone; which server serves which database is known from the pids the
// tests record when they start one (serverStarted), since another
// process's command line and environment are not readable here.

import (
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

type winProc struct {
	pid, ppid int
	image     string // the executable's file name, e.g. mcp-sqlite-memory-worker.exe
}

// processList lists the processes that run now.
func processList() []winProc {
	h, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPPROCESS, 0)
	if err != nil {
		return nil
	}
	defer windows.CloseHandle(h)
	var e windows.ProcessEntry32
	e.Size = uint32(unsafe.Sizeof(e))
	var procs []winProc
	for err = windows.Process32First(h, &e); err == nil; err = windows.Process32Next(h, &e) {
		procs = append(procs, winProc{pid: int(e.ProcessID), ppid: int(e.ParentProcessID), image: windows.UTF16ToString(e.ExeFile[:])})
	}
	return procs
}

// imagePath is the full path of a process's executable, or "".
func imagePath(pid int) string {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return ""
	}
	defer windows.CloseHandle(h)
	buf := make([]uint16, windows.MAX_LONG_PATH)
	n := uint32(len(buf))
	if windows.QueryFullProcessImageName(h, 0, &buf[0], &n) != nil {
		return ""
	}
	return windows.UTF16ToString(buf[:n])
}

// processes lists, in order, the pids of running processes for which
// match is true.
func processes(match func(pid int) bool) []int {
	var pids []int
	for _, p := range processList() {
		if match(p.pid) {
			pids = append(pids, p.pid)
		}
	}
	slices.Sort(pids)
	return pids
}

// procArgs returns what Windows tells of a process's command line, its
// executable's path alone, and its parent pid.
func procArgs(pid int) ([]string, int) {
	for _, p := range processList() {
		if p.pid == pid {
			if path := imagePath(pid); path != "" {
				return []string{path}, p.ppid
			}
			return nil, p.ppid
		}
	}
	return nil, 0
}

// startedServer is the pid of the newest server started for db, or 0.
func startedServer(db string) int {
	if cmd, ok := startedServers.Load(db); ok && cmd.(*exec.Cmd).Process != nil {
		return cmd.(*exec.Cmd).Process.Pid
	}
	return 0
}

// serverOf finds the pid of the server process bin serving db, or 0.
func serverOf(bin, db string) int {
	pid := startedServer(db)
	if pid == 0 {
		return 0
	}
	for _, p := range processList() {
		if p.pid == pid && strings.EqualFold(p.image, filepath.Base(bin)) {
			return pid
		}
	}
	return 0
}

// workersOfServer lists the worker processes whose parent is pid: the
// lean worker, or a server binary re-run as its worker.
func workersOfServer(pid int) []int {
	if pid == 0 {
		return nil
	}
	var pids []int
	for _, p := range processList() {
		if p.ppid == pid && isWorkerImage(p.image) {
			pids = append(pids, p.pid)
		}
	}
	slices.Sort(pids)
	return pids
}

func isWorkerImage(image string) bool {
	return strings.EqualFold(image, filepath.Base(workerBin)) || strings.EqualFold(image, filepath.Base(serverBin))
}

// workersOf lists the workers of the server started for db.
func workersOf(db string) []int { return workersOfServer(startedServer(db)) }

// alive reports whether pid is a process that has not ended.
func alive(pid int) bool {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return false
	}
	defer windows.CloseHandle(h)
	var code uint32
	if windows.GetExitCodeProcess(h, &code) != nil {
		return false
	}
	return code == 259 // STILL_ACTIVE
}

// rssKB is not read on Windows.
func rssKB(int) int64 { return -1 }

// procStatus and running read /proc, which Windows has no counterpart of
// here; the tests that call them skip on Windows.
func procStatus(int, string) string { return "" }
func running(int) bool              { return false }

// stopSignals are the ways a host stops a server besides closing its
// stdin. Windows has no SIGTERM a parent can send; CTRL_BREAK, sent to
// the server's own process group, is what Go delivers as os.Interrupt.
var stopSignals = map[string]func(*exec.Cmd) error{
	"CTRL_BREAK": func(cmd *exec.Cmd) error {
		return windows.GenerateConsoleCtrlEvent(windows.CTRL_BREAK_EVENT, uint32(cmd.Process.Pid))
	},
}

// newProcessGroup starts cmd in a process group of its own, so that a
// CTRL_BREAK reaches it and not the test.
func newProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP}
}

// signalUnsupported says why a stop signal that failed cannot be checked
// here, or "" when the failure is the server's. Wine 8 gives a process
// without a real console nothing to deliver a console control event
// through: GenerateConsoleCtrlEvent answers ERROR_INVALID_ACCESS there.
func signalUnsupported(err error) string {
	if underWine() && errors.Is(err, windows.ERROR_INVALID_ACCESS) {
		return "Wine 8 cannot deliver CTRL_BREAK without a console (GenerateConsoleCtrlEvent: Invalid access); on Windows it reaches the server's process group and Go delivers it as os.Interrupt, the SIGINT path tested on Linux"
	}
	return ""
}

// underWine tells a Windows test binary run by Wine, whose ntdll exports
// wine_get_version.
func underWine() bool {
	return windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
}
