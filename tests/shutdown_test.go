package tests

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// workersOf lists the processes whose environment names db as the database
// they were started for: the workers of one server, wherever they were
// reparented.
func workersOf(db string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && bytes.Contains(env, []byte("="+db+"\x00")) && bytes.Contains(env, []byte("MCP_SQLITE_WORKER_PREOPEN=")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestShutdown: when the host closes stdin or sends SIGTERM while a call
// runs, the server lets the call finish within its timeout, answers and
// audits it, stops every worker (standby included) and exits 0.
func TestShutdown(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("finds workers through /proc")
	}
	for _, how := range []string{"stdin closed", "SIGTERM"} {
		t.Run(how, func(t *testing.T) {
			db := newDB(t)
			cmd := exec.Command(serverBin, "--db", db, "--query-timeout", "2")
			in, _ := cmd.StdinPipe()
			out, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			c := &rawClient{tb: t, in: in, out: bufio.NewReader(out)}
			c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
			c.read()
			c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_query","arguments":{"query":"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"}}}`)
			time.Sleep(300 * time.Millisecond)
			if len(workersOf(db)) == 0 {
				t.Fatal("no workers running before the shutdown")
			}
			if how == "SIGTERM" {
				_ = cmd.Process.Signal(syscall.SIGTERM)
			} else {
				in.Close()
			}
			answer, _ := io.ReadAll(out)
			err := cmd.Wait()
			if exitCode(err) != 0 {
				t.Fatalf("exit %d", exitCode(err))
			}
			if !strings.Contains(string(answer), "TIMEOUT: query stopped after 2s") {
				t.Errorf("the running call was not answered: %q", answer)
			}
			if tool, ok, e := lastAudit(t, db); tool != "read_query" || ok || !strings.HasPrefix(e, "TIMEOUT") {
				t.Errorf("audit: %s %v %q", tool, ok, e)
			}
			if left := workersOf(db); len(left) > 0 {
				t.Errorf("workers outlived the server: %v", left)
			}
		})
	}
}
