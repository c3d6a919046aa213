package replicate

import (
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
)

// GuardCommand is the hidden subcommand that runs Litestream for a server:
// `mcp-sqlite-memory litestream-guard LITESTREAM CONFIG`.
const GuardCommand = "litestream-guard"

// RunGuard is the guard: it runs `litestream replicate -config CONFIG`
// until its stdin ends (the server closed it, or died) or it gets
// SIGINT/SIGTERM, then asks Litestream to stop, once, so that it syncs what
// is left, waits for it, and runs `litestream replicate -once` to sync
// anything it had not yet picked up (Litestream opens a database on its
// first monitor tick; a session shorter than that leaves the daemon nothing
// to sync). It returns the exit status: 0 after a requested stop, 1 when
// Litestream exited by itself (the server reports it).
//
// The guard holds whatever descriptors it inherited (the server's locks)
// until it exits, so they outlive the server by exactly as long as
// replication still runs.
func RunGuard(args []string, stdin io.Reader, stderr io.Writer) int {
	log := hclog.New(&hclog.LoggerOptions{Name: "mcp-sqlite-memory.replication", Output: stderr, Level: hclog.Info})
	if len(args) != 2 {
		log.Error("usage: " + GuardCommand + " LITESTREAM CONFIG (started by the server for --replicate)")
		return exitUsageStatus
	}
	bin, config := args[0], args[1]
	// Signals to the guard count as the end of stdin, and only the first:
	// a second interrupt would make Litestream skip its final sync.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	// A killed server's host may stop reading the stderr the guard shares:
	// a write must then fail quietly, not end the guard with SIGPIPE.
	signal.Ignore(syscall.SIGPIPE)
	out := lossyWriter{stderr}

	cmd := exec.Command(bin, "replicate", "-config", config)
	// Litestream's output is relayed, so that Litestream never writes to a
	// pipe nobody reads (it would die of SIGPIPE in its final sync).
	cmd.Stdout, cmd.Stderr = out, out // stdin stays /dev/null
	prepareLitestream(cmd)
	if err := cmd.Start(); err != nil {
		log.Error("cannot start Litestream", "error", err)
		return 1
	}
	log.Info("Litestream started", "litestream_pid", cmd.Process.Pid)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	ended := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, stdin); close(ended) }()

	select {
	case err := <-exited:
		log.Error("Litestream exited by itself", "status", exitStatus(err))
		return 1
	case <-ended:
	case <-sigs:
	}
	if err := interruptLitestream(cmd.Process); err != nil {
		log.Warn("cannot ask Litestream to stop; killing it (the final sync below still runs)", "error", err)
		_ = cmd.Process.Kill()
	}
	select {
	case err := <-exited:
		// A signal that arrives before Litestream has set up its handler
		// ends it at once; the final sync below makes up for it.
		log.Debug("Litestream stopped", "status", exitStatus(err))
	case <-time.After(litestreamStopTimeout):
		log.Error("Litestream did not stop in time; killed (the final sync below still runs)", "waited", litestreamStopTimeout)
		_ = cmd.Process.Kill()
		<-exited
	}
	litestreamOnce(bin, config, log, out)
	return 0
}

// lossyWriter passes writes on and never fails: a relay that stopped at
// the first failed write would leave Litestream blocked on a full pipe.
type lossyWriter struct{ w io.Writer }

func (l lossyWriter) Write(p []byte) (int, error) {
	_, _ = l.w.Write(p)
	return len(p), nil
}

// exitUsageStatus is the exit status of a bad command line (as in cli).
const exitUsageStatus = 2
