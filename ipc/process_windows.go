package ipc

import (
	"errors"
	"fmt"
	"os/exec"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// platformHandle is the Job Object that holds one worker.
type platformHandle struct{ job windows.Handle }

// prepareCommand creates the worker suspended: it runs no instruction
// before attachLimits has put it in its Job Object and resumed it.
func prepareCommand(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP | windows.CREATE_SUSPENDED}
}

// attachLimits puts the suspended worker in a Job Object that caps its
// memory, allows no child processes and no breakaway, and kills it when the
// front's handle closes (also when the front dies); then it resumes it. On
// failure the caller kills the still-suspended process.
func attachLimits(cmd *exec.Cmd, memoryMB int) (platformHandle, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return platformHandle{}, fmt.Errorf("create job object: %w", err)
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
		return platformHandle{}, fmt.Errorf("set job limits: %w", err)
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

// resumeProcess resumes the threads of a process created suspended (its
// main thread: os/exec closes the thread handle CreateProcess returned, so
// the thread is found by a snapshot of the system's threads).
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
