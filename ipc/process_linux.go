package ipc

import (
	"os/exec"
	"syscall"
)

// platformHandle holds nothing on Linux: the worker limits itself with
// setrlimit, and the process group is enough to kill it.
type platformHandle struct{}

// prepareCommand puts the worker in its own process group (so a kill reaches
// anything it might start) and has the kernel kill it if the front dies.
func prepareCommand(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

func attachLimits(*exec.Cmd, int) (platformHandle, error) { return platformHandle{}, nil }

func releaseLimits(platformHandle) {}

func killProcess(cmd *exec.Cmd, _ platformHandle) {
	if cmd.Process == nil {
		return
	}
	// The group first; the process itself in case it left the group.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Process.Kill()
}
