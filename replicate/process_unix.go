//go:build unix

package replicate

import (
	"os"
	"os/exec"
	"syscall"
)

// prepareLitestream puts the process (the guard, Litestream, or a
// `replicate -once`) in its own process group, so that a Ctrl-C or a
// host's signal to the server's group does not reach Litestream besides
// the guard's own request (a second signal makes it skip its final sync),
// and hands it the given descriptors (the server's locks).
func prepareLitestream(cmd *exec.Cmd, locks ...*os.File) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.ExtraFiles = locks
}

// interruptLitestream asks Litestream for a clean stop.
func interruptLitestream(p *os.Process) error { return p.Signal(syscall.SIGTERM) }
