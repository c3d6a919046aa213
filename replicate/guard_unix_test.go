//go:build unix

package replicate

import (
	"bytes"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as a fake litestream for the guard: with
// FAKE_LITESTREAM_LOG set it records what it was asked to do in that file.
// FAKE_LITESTREAM_MODE=die makes `replicate` exit by itself at once.
func TestMain(m *testing.M) {
	if log := os.Getenv("FAKE_LITESTREAM_LOG"); log != "" {
		os.Exit(fakeLitestream(log, os.Args[1:]))
	}
	os.Exit(m.Run())
}

func fakeLitestream(log string, args []string) int {
	f, err := os.OpenFile(log, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return 9
	}
	defer f.Close()
	record := func(s string) { fmt.Fprintln(f, s) }
	if len(args) > 3 && args[3] == "-once" {
		record("once " + strings.Join(args[1:3], " "))
		return 0
	}
	if os.Getenv("FAKE_LITESTREAM_MODE") == "die" {
		record("died")
		return 3
	}
	sigs := make(chan os.Signal, 10)
	signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
	record("started " + strings.Join(args[1:3], " "))
	<-sigs
	// Count any further signal for a while: Litestream treats a second
	// one as "skip the final sync".
	n := 1
	for deadline := time.After(300 * time.Millisecond); ; {
		select {
		case <-sigs:
			n++
			continue
		case <-deadline:
		}
		break
	}
	record(fmt.Sprintf("signals %d", n))
	return 0
}

// pipeStdin is the guard's stdin: closing w ends it.
func pipeStdin(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

func TestLitestreamGuard(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		mode   string
		status int
		log    string
	}{
		{"stdin ends: one signal, then a final sync", "", 0, "started -config cfg.yml\nsignals 1\nonce -config cfg.yml\n"},
		{"litestream exits by itself", "die", 1, "died\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			log := t.TempDir() + "/fake.log"
			t.Setenv("FAKE_LITESTREAM_LOG", log)
			t.Setenv("FAKE_LITESTREAM_MODE", tt.mode)
			stdin, end := pipeStdin(t)
			var stderr bytes.Buffer
			done := make(chan int, 1)
			go func() { done <- RunGuard([]string{self, "cfg.yml"}, stdin, &stderr) }()
			if tt.mode == "" {
				waitFileContains(t, log, "started")
				end.Close()
			}
			select {
			case status := <-done:
				if status != tt.status {
					t.Fatalf("status %d, want %d; log:\n%s", status, tt.status, stderr.String())
				}
			case <-time.After(60 * time.Second):
				t.Fatal("the guard did not return")
			}
			if got, _ := os.ReadFile(log); string(got) != tt.log {
				t.Fatalf("fake litestream saw:\n%s\nwant:\n%s\nguard log:\n%s", got, tt.log, stderr.String())
			}
		})
	}
	t.Run("bad arguments", func(t *testing.T) {
		var stderr bytes.Buffer
		if status := RunGuard([]string{"only-one"}, strings.NewReader(""), &stderr); status != 2 || !strings.Contains(stderr.String(), "usage") {
			t.Fatalf("status %d, log %q", status, stderr.String())
		}
	})
}

func waitFileContains(t *testing.T, path, s string) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; {
		if b, _ := os.ReadFile(path); strings.Contains(string(b), s) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never contained %q", path, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
