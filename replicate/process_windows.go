package replicate

import (
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/windows"
)

// prepareLitestream gives the process its own process group, so that a
// CTRL_BREAK can be sent to it alone. Windows passes no extra handles: the
// guard does not hold the server's locks, so a snapshot restore cannot see
// a Litestream that outlives its server.
func prepareLitestream(cmd *exec.Cmd, _ ...*os.File) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP}
}

// interruptLitestream sends CTRL_BREAK, which Go programs receive as
// os.Interrupt (Litestream's clean stop with a final sync). It fails when
// there is no console to share; the caller then kills Litestream, and the
// final `replicate -once` still syncs.
func interruptLitestream(p *os.Process) error {
	return windows.GenerateConsoleCtrlEvent(windows.CTRL_BREAK_EVENT, uint32(p.Pid))
}
