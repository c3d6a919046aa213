package worker

import (
	"errors"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/sandbox"
)

// skipSeccomp is set only in test binaries built with the sandboxprobe
// tag, to play a worker older than the filter (which the front refuses).
var skipSeccomp bool

// confineSyscalls gives a confined worker its system call allowlist (on
// every thread), once its limits are set and its database is open, and
// before it reads its request: from then on no socket, no new process, no
// exec or ptrace (sandbox/DESIGN.md). Where the kernel has no seccomp the
// worker runs on without it (the front says so once, at start); on an
// architecture without a table it refuses to run confined.
func confineSyscalls(st *sandbox.State, log hclog.Logger) error {
	if st.Allowance == nil || st.Off || skipSeccomp {
		return nil
	}
	err := sandbox.RestrictSyscalls()
	switch {
	case err == nil:
		st.Report.Seccomp = true
		log.Debug("seccomp allowlist in effect")
	case errors.Is(err, sandbox.ErrNoSeccomp):
		log.Debug(err.Error())
	default:
		return err
	}
	return nil
}
