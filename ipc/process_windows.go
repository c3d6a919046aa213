package ipc

import (
	"fmt"
	"os/exec"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// platformHandle is the Job Object that holds one worker.
type platformHandle struct{ job windows.Handle }

func prepareCommand(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP}
}

// attachLimits puts the worker in a Job Object that caps its memory, allows
// no child processes and no breakaway, and kills it when the front's handle
// closes (also when the front dies). The worker does nothing before it reads
// its request, which the front writes only after this returns.
func attachLimits(cmd *exec.Cmd, memoryMB int) (platformHandle, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return platformHandle{}, fmt.Errorf("create job object: %w", err)
	}
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
	proc, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(cmd.Process.Pid))
	if err != nil {
		windows.CloseHandle(job)
		return platformHandle{}, fmt.Errorf("open worker process: %w", err)
	}
	defer windows.CloseHandle(proc)
	if err := windows.AssignProcessToJobObject(job, proc); err != nil {
		windows.CloseHandle(job)
		return platformHandle{}, fmt.Errorf("assign worker to job: %w", err)
	}
	return platformHandle{job: job}, nil
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
