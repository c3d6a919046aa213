package ipc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"unicode/utf16"
	"unsafe"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/windows"
)

// A worker is born inside its Job Object: CreateProcess with
// PROC_THREAD_ATTRIBUTE_JOB_LIST (Windows 10 and later) puts it there
// before its first instruction, so no moment exists in which the front's
// death leaves it outside (the job's kill-on-close ends it with the
// front's last handle). Where the attribute is refused, the worker is
// created suspended by os/exec and assigned to its job afterwards, as
// before; a front killed between the two leaves that worker suspended for
// good, which the log says once.

// procThreadAttributeJobList is PROC_THREAD_ATTRIBUTE_JOB_LIST
// (ProcThreadAttributeValue(13, FALSE, TRUE, FALSE)), which x/sys lacks.
const procThreadAttributeJobList = 0x0002000D

// platformHandle is the Job Object that holds one worker and, until it is
// resumed, the main thread of a worker created inside it.
type platformHandle struct {
	job    windows.Handle
	thread windows.Handle
}

// jobListRefused is set once creating a worker inside its job failed where
// the fallback then succeeded: every later worker takes the fallback.
var (
	jobListRefused atomic.Bool
	jobListLogged  sync.Once
)

// prepareCommand creates the worker suspended: it runs no instruction
// before attachLimits has resumed it inside its Job Object.
func prepareCommand(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP | windows.CREATE_SUSPENDED}
}

// startCommand starts cmd's process suspended: inside a new Job Object
// where the platform allows it, else (os/exec) outside any job, for
// attachLimits to assign.
func startCommand(cmd *exec.Cmd, memoryMB int, log hclog.Logger) (platformHandle, error) {
	if cmd.Err != nil {
		return platformHandle{}, cmd.Err
	}
	if jobListRefused.Load() {
		return platformHandle{}, cmd.Start()
	}
	h, err := createInJob(cmd, memoryMB)
	var created *createdError
	switch {
	case err == nil:
		jobListLogged.Do(func() {
			log.Debug("workers are created inside their Job Object (PROC_THREAD_ATTRIBUTE_JOB_LIST)")
		})
		return h, nil
	case errors.As(err, &created):
		return platformHandle{}, created.err // created, then lost: no second start
	}
	if err := cmd.Start(); err != nil {
		return platformHandle{}, err
	}
	// The plain start worked: what failed was the job list.
	jobListRefused.Store(true)
	jobListLogged.Do(func() {
		log.Warn("Windows refused to create a worker inside its Job Object; workers are created suspended and then assigned to it, so a server killed in between leaves that worker suspended", "error", err)
	})
	return platformHandle{}, nil
}

// createdError is a failure after the worker was created (and killed
// again): the fallback must not start a second one.
type createdError struct{ err error }

func (e *createdError) Error() string { return e.err.Error() }

// newJob makes a Job Object that caps a worker's memory, allows no child
// processes and no breakaway, and kills the worker when the front's handle
// closes (also when the front dies).
func newJob(memoryMB int) (windows.Handle, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return 0, fmt.Errorf("create job object: %w", err)
	}
	// No JOB_OBJECT_LIMIT_BREAKAWAY_OK: nothing started inside may leave.
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{
		BasicLimitInformation: windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{
			LimitFlags: windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE |
				windows.JOB_OBJECT_LIMIT_ACTIVE_PROCESS |
				windows.JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION,
			ActiveProcessLimit: 1,
		},
	}
	if memoryMB > 0 {
		info.BasicLimitInformation.LimitFlags |= windows.JOB_OBJECT_LIMIT_PROCESS_MEMORY
		info.ProcessMemoryLimit = uintptr(memoryMB) << 20
	}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return 0, fmt.Errorf("set job limits: %w", err)
	}
	return job, nil
}

// createInJob is os/exec's start of cmd done by hand, for the one thing
// os/exec cannot do: a job list. The process is created suspended, with
// the child's ends of cmd's three pipes as the only handles it inherits;
// cmd.Process is then set, so that cmd.Wait reaps it.
func createInJob(cmd *exec.Cmd, memoryMB int) (platformHandle, error) {
	var std [3]*os.File
	for i, s := range []any{cmd.Stdin, cmd.Stdout, cmd.Stderr} {
		f, ok := s.(*os.File)
		if !ok {
			return platformHandle{}, errors.New("a worker's standard streams must be pipes")
		}
		std[i] = f
	}
	argv0, err := windows.UTF16PtrFromString(cmd.Path)
	if err != nil {
		return platformHandle{}, err
	}
	cmdLine, err := windows.UTF16PtrFromString(windows.ComposeCommandLine(cmd.Args))
	if err != nil {
		return platformHandle{}, err
	}
	var dir *uint16
	if cmd.Dir != "" {
		if dir, err = windows.UTF16PtrFromString(cmd.Dir); err != nil {
			return platformHandle{}, err
		}
	}
	env, err := envBlock(cmd.Env)
	if err != nil {
		return platformHandle{}, err
	}
	job, err := newJob(memoryMB)
	if err != nil {
		return platformHandle{}, err
	}
	created := false
	defer func() {
		if !created {
			windows.CloseHandle(job)
		}
	}()

	// As os/exec does: inheritable copies of the child's ends, made under
	// ForkLock, listed as the only handles the child inherits.
	syscall.ForkLock.Lock()
	defer syscall.ForkLock.Unlock()
	self := windows.CurrentProcess()
	handles := make([]windows.Handle, 0, len(std))
	defer func() {
		for _, h := range handles {
			windows.CloseHandle(h)
		}
	}()
	for _, f := range std {
		var h windows.Handle
		if err := windows.DuplicateHandle(self, windows.Handle(f.Fd()), self, &h, 0, true, windows.DUPLICATE_SAME_ACCESS); err != nil {
			return platformHandle{}, fmt.Errorf("duplicate a standard handle: %w", err)
		}
		handles = append(handles, h)
	}
	jobs := []windows.Handle{job}
	attrs, err := windows.NewProcThreadAttributeList(2)
	if err != nil {
		return platformHandle{}, err
	}
	defer attrs.Delete()
	if err := attrs.Update(windows.PROC_THREAD_ATTRIBUTE_HANDLE_LIST, unsafe.Pointer(&handles[0]), uintptr(len(handles))*unsafe.Sizeof(handles[0])); err != nil {
		return platformHandle{}, fmt.Errorf("handle list: %w", err)
	}
	if err := attrs.Update(procThreadAttributeJobList, unsafe.Pointer(&jobs[0]), unsafe.Sizeof(jobs[0])); err != nil {
		return platformHandle{}, fmt.Errorf("job list: %w", err)
	}
	si := windows.StartupInfoEx{ProcThreadAttributeList: attrs.List()}
	si.Cb = uint32(unsafe.Sizeof(si))
	si.Flags = windows.STARTF_USESTDHANDLES
	si.StdInput, si.StdOutput, si.StdErr = handles[0], handles[1], handles[2]
	flags := uint32(windows.CREATE_NEW_PROCESS_GROUP | windows.CREATE_SUSPENDED |
		windows.CREATE_UNICODE_ENVIRONMENT | windows.EXTENDED_STARTUPINFO_PRESENT)
	var pi windows.ProcessInformation
	if err := windows.CreateProcess(argv0, cmdLine, nil, nil, true, flags, env, dir, &si.StartupInfo, &pi); err != nil {
		return platformHandle{}, fmt.Errorf("create the worker inside its job: %w", err)
	}
	created = true
	// While pi.Process is open, the pid names no other process.
	proc, err := os.FindProcess(int(pi.ProcessId))
	windows.CloseHandle(pi.Process)
	if err != nil {
		_ = windows.TerminateJobObject(job, 1)
		windows.CloseHandle(job)
		windows.CloseHandle(pi.Thread)
		return platformHandle{}, &createdError{err}
	}
	cmd.Process = proc
	// The child has its copies; os/exec would close these after Start.
	for _, f := range std {
		f.Close()
	}
	return platformHandle{job: job, thread: pi.Thread}, nil
}

// envBlock is env as CreateProcess takes it: NUL-separated, ending in two
// NULs, each name once (the last value wins, names compared without case,
// as os/exec does), with SYSTEMROOT, which Windows programs need.
func envBlock(env []string) (*uint16, error) {
	if env == nil {
		env = os.Environ()
	}
	seen := map[string]int{}
	var kept []string
	for _, kv := range env {
		// A name may start with "=" (the per-drive directories).
		first := kv[:min(1, len(kv))]
		name, _, _ := strings.Cut(kv[len(first):], "=")
		name = strings.ToUpper(first + name)
		if i, dup := seen[name]; dup {
			kept[i] = kv
			continue
		}
		seen[name] = len(kept)
		kept = append(kept, kv)
	}
	if _, ok := seen["SYSTEMROOT"]; !ok {
		if v, ok := os.LookupEnv("SYSTEMROOT"); ok {
			kept = append(kept, "SYSTEMROOT="+v)
		}
	}
	var block []uint16
	for _, kv := range kept {
		if strings.IndexByte(kv, 0) >= 0 {
			return nil, fmt.Errorf("environment variable %q holds a NUL", kv)
		}
		block = append(block, utf16.Encode([]rune(kv))...)
		block = append(block, 0)
	}
	if len(block) == 0 {
		block = append(block, 0)
	}
	block = append(block, 0)
	return &block[0], nil
}

// attachLimits lets the suspended worker run inside its Job Object: one
// created inside it is resumed; one created outside (the fallback) is first
// assigned to a new job. On failure the caller kills the process.
func attachLimits(cmd *exec.Cmd, h platformHandle, memoryMB int) (platformHandle, error) {
	if h.job != 0 {
		_, err := windows.ResumeThread(h.thread)
		windows.CloseHandle(h.thread)
		h.thread = 0
		if err != nil {
			return h, fmt.Errorf("resume worker: %w", err)
		}
		return h, nil
	}
	job, err := newJob(memoryMB)
	if err != nil {
		return platformHandle{}, err
	}
	pid := uint32(cmd.Process.Pid)
	proc, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, pid)
	if err != nil {
		windows.CloseHandle(job)
		return platformHandle{}, fmt.Errorf("open worker process: %w", err)
	}
	defer windows.CloseHandle(proc)
	if err := windows.AssignProcessToJobObject(job, proc); err != nil {
		windows.CloseHandle(job)
		return platformHandle{}, fmt.Errorf("assign worker to job: %w", err)
	}
	if err := resumeProcess(pid); err != nil {
		_ = windows.TerminateJobObject(job, 1)
		windows.CloseHandle(job)
		return platformHandle{}, fmt.Errorf("resume worker: %w", err)
	}
	return platformHandle{job: job}, nil
}

// resumeProcess resumes the threads of a process os/exec created
// suspended (its main thread: os/exec closes the thread handle
// CreateProcess returned, so the thread is found by a snapshot of the
// system's threads).
func resumeProcess(pid uint32) error {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPTHREAD, 0)
	if err != nil {
		return fmt.Errorf("thread snapshot: %w", err)
	}
	defer windows.CloseHandle(snap)
	entry := windows.ThreadEntry32{Size: uint32(unsafe.Sizeof(windows.ThreadEntry32{}))}
	resumed := 0
	for err = windows.Thread32First(snap, &entry); err == nil; err = windows.Thread32Next(snap, &entry) {
		if entry.OwnerProcessID != pid {
			continue
		}
		th, err := windows.OpenThread(windows.THREAD_SUSPEND_RESUME, false, entry.ThreadID)
		if err != nil {
			return fmt.Errorf("open thread %d: %w", entry.ThreadID, err)
		}
		_, err = windows.ResumeThread(th)
		windows.CloseHandle(th)
		if err != nil {
			return fmt.Errorf("resume thread %d: %w", entry.ThreadID, err)
		}
		resumed++
	}
	if !errors.Is(err, windows.ERROR_NO_MORE_FILES) {
		return fmt.Errorf("walk threads: %w", err)
	}
	if resumed == 0 {
		return fmt.Errorf("no thread of process %d found", pid)
	}
	return nil
}

func releaseLimits(h platformHandle) {
	if h.thread != 0 {
		windows.CloseHandle(h.thread)
	}
	if h.job != 0 {
		windows.CloseHandle(h.job)
	}
}

func killProcess(cmd *exec.Cmd, h platformHandle) {
	if h.job != 0 {
		_ = windows.TerminateJobObject(h.job, 1)
	}
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}

// limitAddressSpace is Linux's: no worker is started confined by the front
// here.
func limitAddressSpace(int, int) error { return nil }
