//go:build !linux && !windows

package ipc

import (
	"os/exec"

	"github.com/hashicorp/go-hclog"
)

// platformHandle is empty where no process grouping is implemented; the
// worker still limits itself where setrlimit exists.
type platformHandle struct{}

func prepareCommand(*exec.Cmd) {}

// startCommand starts the worker; it runs from its first instruction.
func startCommand(cmd *exec.Cmd, _ int, _ hclog.Logger) (platformHandle, error) {
	return platformHandle{}, cmd.Start()
}

func attachLimits(*exec.Cmd, platformHandle, int) (platformHandle, error) {
	return platformHandle{}, nil
}

func releaseLimits(platformHandle) {}

func killProcess(cmd *exec.Cmd, _ platformHandle) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}

// limitAddressSpace is Linux's: no worker is started confined by the front
// here.
func limitAddressSpace(int, int) error { return nil }
