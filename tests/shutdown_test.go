package tests

import (
	"bytes"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestShutdown: when the host closes stdin or sends SIGTERM or SIGINT while
// a runaway call runs, the server stops the call at once whatever
// --query-timeout is (30 s here), audits it as CANCELLED, sends it no
// response (MCP), stops every worker (standby included) and exits 0 within
// 2 s.
func TestShutdown(t *testing.T) {
	ways := []string{"stdin closed"}
	for name := range stopSignals {
		ways = append(ways, name)
	}
	slices.Sort(ways)
	for _, how := range ways {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			db := newDB(t)
			cmd := exec.Command(serverBin, "--db", db, "--query-timeout", "30")
			serverStarted(db, cmd)
			newProcessGroup(cmd)
			c := pipeServer(t, cmd)
			c.handshake(rawInitialize)
			c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_query","arguments":{"query":"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"}}}`)
			// The call took the standby worker and a new standby started.
			if !waitFor(10*time.Second, func() bool { return len(workersOf(db)) >= 2 }) {
				t.Fatalf("workers before the shutdown: %v", workersOf(db))
			}
			time.Sleep(200 * time.Millisecond)
			began := time.Now()
			if send, ok := stopSignals[how]; ok {
				if err := send(cmd); err != nil {
					if reason := signalUnsupported(err); reason != "" {
						t.Skip(reason)
					}
					t.Fatalf("%s: %v", how, err)
				}
			} else {
				c.in.Close()
			}
			answer, _ := io.ReadAll(c.out)
			err := c.wait()
			if d := time.Since(began); d > 2*time.Second {
				t.Errorf("exit took %s with --query-timeout 30", d)
			}
			if exitCode(err) != 0 {
				t.Fatalf("exit %d", exitCode(err))
			}
			if bytes.Contains(answer, []byte(`"id":2`)) {
				t.Errorf("the stopped call got a response: %q", answer)
			}
			if tool, ok, e := lastAudit(t, db); tool != "read_query" || ok || e != "CANCELLED: server shutting down" {
				t.Errorf("audit: %s %v %q", tool, ok, e)
			}
			if left := workersOf(db); len(left) > 0 {
				t.Errorf("workers outlived the server: %v", left)
			}
		})
	}
}

// TestQuietShutdown: a session that ends while standby workers are still
// starting logs nothing above DEBUG for the workers the shutdown kills
// (issue 25: a warning there read as "the sandbox failed"). Each session
// makes one call and closes stdin at once, while the replacement standbys
// start; stderr is read to its end (an MCP client library may close it
// before the server's last lines).
func TestQuietShutdown(t *testing.T) {
	t.Parallel()
	for i := range 3 {
		cmd := exec.Command(serverBin, "--db", newDB(t))
		var stderr lockedBuffer
		cmd.Stderr = &stderr
		c := pipeServer(t, cmd)
		c.handshake(rawInitialize)
		c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"append_event","arguments":{"content":"one event"}}}`)
		c.read()
		c.in.Close()
		_, _ = io.ReadAll(c.out)
		if err := c.wait(); err != nil {
			t.Fatalf("session %d: exit: %v\n%s", i+1, err, bounded(stderr.String()))
		}
		for _, line := range strings.Split(stderr.String(), "\n") {
			if strings.Contains(line, "[WARN]") || strings.Contains(line, "[ERROR]") {
				t.Errorf("session %d: shutdown logged %s", i+1, bounded(line))
			}
		}
	}
}
