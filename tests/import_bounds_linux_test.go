package tests

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// longLine is an export whose first line is n bytes long, without end.
type longLine struct{ n int }

func (l *longLine) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, io.EOF
	}
	p = p[:min(len(p), l.n)]
	for i := range p {
		p[i] = 'a'
	}
	l.n -= len(p)
	return len(p), nil
}

// TestImportEndlessLineOverCLI: verify --jsonl and import stop at the
// line bound (16 MiB) with a clear error, holding no more than a few times
// the bound, however long the line is (issue 29 item 8).
func TestImportEndlessLineOverCLI(t *testing.T) {
	t.Parallel()
	dir := testDir(t)
	for _, args := range [][]string{
		{"verify", "--jsonl", "-"},
		{"import", "--db", filepath.Join(dir, "new.db"), "-"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		// Through the probe: a child's max RSS counts its parent's at the
		// fork, and this test binary is large in a full run.
		cmd := exec.CommandContext(ctx, os.Args[0], append([]string{serverBin}, args...)...)
		cmd.Env = append(os.Environ(), rssProbeEnv+"=1")
		// 64 MiB, four times the bound: enough to tell a bounded reader
		// from one that holds the line (which took 787 MiB for it), and
		// finite, so that a regression cannot take the machine's memory.
		cmd.Stdin = &longLine{64 << 20}
		var errOut, out bytes.Buffer
		cmd.Stderr = &errOut
		cmd.Stdout = &out
		err := cmd.Run()
		cancel()
		if _, ok := err.(*exec.ExitError); !ok || cmd.ProcessState.ExitCode() == 0 || !strings.Contains(errOut.String(), "line 1: the line is longer than 16 MiB") {
			t.Fatalf("%s: %v %q", args[0], err, errOut.String())
		}
		// Maxrss is in KiB on Linux. The bound is 16 MiB; the runtime, the
		// reader's buffer and the line's own growth stay well below 128.
		rss, err := strconv.ParseInt(strings.TrimSpace(lastLine(out.String())), 10, 64)
		if err != nil {
			t.Fatalf("%s: the probe printed %q", args[0], out.String())
		}
		t.Logf("%s: max RSS %d MiB", args[0], rss>>10)
		bound := int64(128 << 10)
		if os.Getenv(raceEnv) != "" {
			bound *= 4 // the race detector's shadow memory, still far below an unbounded read
		}
		if rss > bound {
			t.Fatalf("%s: the process grew to %d MiB on a long line", args[0], rss>>10)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
		t.Fatalf("a refused import left %v behind", left)
	}
}

// rssProbeEnv makes the test binary, re-run, run its arguments as a
// command and print the command's max RSS (KiB) as its last stdout line:
// a child's max RSS starts at its parent's at the fork, and the probe is
// small where the test binary of a full run is not.
const rssProbeEnv = "MCP_SQLITE_E2E_RSS_PROBE"

func runRSSProbe(args []string) int {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stderr = os.Stdin, os.Stderr
	var out bytes.Buffer
	cmd.Stdout = &out
	err := cmd.Run()
	os.Stdout.Write(out.Bytes())
	if cmd.ProcessState == nil {
		fmt.Fprintln(os.Stderr, err)
		return 125
	}
	fmt.Printf("\n%d\n", cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss)
	return cmd.ProcessState.ExitCode()
}
