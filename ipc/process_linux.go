package ipc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"
)

// platformHandle holds nothing on Linux: the worker limits itself with
// setrlimit, and the process group is enough to kill it.
type platformHandle struct{}

// prepareCommand puts the worker in its own process group (so a kill reaches
// anything it might start) and has the kernel kill it if the front dies.
func prepareCommand(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// startCommand starts the worker; it runs from its first instruction.
func startCommand(cmd *exec.Cmd, _ int, _ hclog.Logger) (platformHandle, error) {
	return platformHandle{}, cmd.Start()
}

func attachLimits(*exec.Cmd, platformHandle, int) (platformHandle, error) {
	return platformHandle{}, nil
}

func releaseLimits(platformHandle) {}

func killProcess(cmd *exec.Cmd, _ platformHandle) {
	if cmd.Process == nil {
		return
	}
	// The group first; the process itself in case it left the group.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Process.Kill()
}

// limitAddressSpace sets RLIMIT_AS of a worker the front started confined:
// such a worker cannot read its own /proc entry to learn its baseline, so
// the front, its parent, reads the worker's mapped size (VmSize) once it is
// ready and sets the limit to that plus the budget plus
// [AddressSpaceMarginMB], as the worker would; the worker trims it to the
// budget once its request is in.
func limitAddressSpace(pid, memoryMB int) error {
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmSize:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return fmt.Errorf("parse VmSize %q: %w", rest, err)
			}
			limit := kb<<10 + uint64(memoryMB+AddressSpaceMarginMB)<<20
			return unix.Prlimit(pid, unix.RLIMIT_AS, &unix.Rlimit{Cur: limit, Max: limit}, nil)
		}
	}
	return errors.New("no VmSize in the worker's /proc status")
}
