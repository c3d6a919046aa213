package contain

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/windows"
)

var (
	once      sync.Once
	contained atomic.Bool
	result    error
)

// Children puts this process in a kill-on-close Job Object that lets
// children break away when asked, once; later calls return the first
// answer. A job the process is already in (a host's) is kept: ours nests
// inside it (Windows 8 and later).
func Children() error {
	once.Do(func() {
		result = enter()
		contained.Store(result == nil)
	})
	return result
}

func enter() error {
	in, err := InJob(windows.CurrentProcess())
	if err != nil {
		return err
	}
	if in {
		// A host's job: ours nests in it, and the guard must be able to
		// leave both. (Wine 8 reads every limit of a job as 0, so there
		// a server in a host's job stays uncontained.)
		var outer windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
		if err := windows.QueryInformationJobObject(0, windows.JobObjectExtendedLimitInformation,
			uintptr(unsafe.Pointer(&outer)), uint32(unsafe.Sizeof(outer)), nil); err != nil {
			return fmt.Errorf("read the host's job limits: %w", err)
		}
		const breakaway = windows.JOB_OBJECT_LIMIT_BREAKAWAY_OK | windows.JOB_OBJECT_LIMIT_SILENT_BREAKAWAY_OK
		if outer.BasicLimitInformation.LimitFlags&breakaway == 0 {
			return ErrNoBreakaway
		}
	}
	j, err := windows.CreateJobObject(nil, nil) // not inheritable: no child keeps it open
	if err != nil {
		return fmt.Errorf("create job object: %w", err)
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{
		BasicLimitInformation: windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{
			LimitFlags: windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE | windows.JOB_OBJECT_LIMIT_BREAKAWAY_OK,
		},
	}
	if _, err := windows.SetInformationJobObject(j, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(j)
		return fmt.Errorf("set job limits: %w", err)
	}
	if err := windows.AssignProcessToJobObject(j, windows.CurrentProcess()); err != nil {
		windows.CloseHandle(j)
		return fmt.Errorf("join the job: %w", err)
	}
	// j is never closed: its last handle closing is what kills the
	// children (and this process), so it lives as long as we do.
	return nil
}

// BreakawayFlag is the CreateProcess flag for a child that must outlive
// this process: CREATE_BREAKAWAY_FROM_JOB once Children has put the
// process in its job, else 0 (a child started before, or in a server that
// could not be contained, is outside our job anyway).
func BreakawayFlag() uint32 {
	if contained.Load() {
		return windows.CREATE_BREAKAWAY_FROM_JOB
	}
	return 0
}

// isProcessInJob is kernel32's IsProcessInJob, which x/sys does not wrap.
var isProcessInJob = windows.NewLazySystemDLL("kernel32.dll").NewProc("IsProcessInJob")

// InJob reports whether the process of handle h (which needs
// PROCESS_QUERY_INFORMATION or PROCESS_QUERY_LIMITED_INFORMATION) is in
// any Job Object.
func InJob(h windows.Handle) (bool, error) {
	var in int32
	if r, _, err := isProcessInJob.Call(uintptr(h), 0, uintptr(unsafe.Pointer(&in))); r == 0 {
		return false, fmt.Errorf("IsProcessInJob: %w", err)
	}
	return in != 0, nil
}
