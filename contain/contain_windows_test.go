package contain

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/windows"
)

// The tests run this binary again as a "server" (helperEnv names what it
// does) that starts one child, writes the child's pid to a file and kills
// itself, as a host or a user ending the server's process would.
const helperEnv = "CONTAIN_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "sleep":
		time.Sleep(2 * time.Minute)
		os.Exit(0)
	case "once":
		os.Exit(checkOnce())
	default:
		helper(os.Getenv(helperEnv), os.Getenv(helperEnv+"_PIDFILE"))
	}
}

// checkOnce checks Children in a process of its own (the test process stays
// out of any job: its helpers must start uncontained).
func checkOnce() int {
	if err := Children(); err != nil {
		fmt.Fprintln(os.Stderr, "first call:", err)
		return 3
	}
	if err := Children(); err != nil {
		fmt.Fprintln(os.Stderr, "second call:", err)
		return 4
	}
	if in, err := InJob(windows.CurrentProcess()); err != nil || !in {
		fmt.Fprintln(os.Stderr, "in a job after Children:", in, err)
		return 5
	}
	if BreakawayFlag() != windows.CREATE_BREAKAWAY_FROM_JOB {
		fmt.Fprintf(os.Stderr, "BreakawayFlag = %#x once contained\n", BreakawayFlag())
		return 6
	}
	return 0
}

func helper(mode, pidFile string) {
	if mode != "uncontained" {
		if err := Children(); err != nil {
			fmt.Fprintln(os.Stderr, "Children:", err)
			os.Exit(3)
		}
	}
	child := exec.Command(os.Args[0])
	child.Env = append(os.Environ(), helperEnv+"=sleep")
	flags := uint32(windows.CREATE_NEW_PROCESS_GROUP)
	if mode == "breakaway" {
		flags |= BreakawayFlag()
	} else {
		// A worker between its start and its own Job Object.
		flags |= windows.CREATE_SUSPENDED
	}
	child.SysProcAttr = &syscall.SysProcAttr{CreationFlags: flags}
	if err := child.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "start:", err)
		os.Exit(4)
	}
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(child.Process.Pid)), 0o644); err != nil {
		os.Exit(5)
	}
	_ = windows.TerminateProcess(windows.CurrentProcess(), 7)
}

// orphan runs the helper in mode and returns its child's handle, nil when
// the child is already gone.
func orphan(t *testing.T, mode string) windows.Handle {
	t.Helper()
	if in, err := InJob(windows.CurrentProcess()); err != nil || in {
		t.Skipf("the test process is in a job already (%v, %v): its helpers could not be contained under Wine", in, err)
	}
	dir, err := os.MkdirTemp("", "contain")
	if err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir: its cleanup fails under Wine (see tests.testDir).
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	pidFile := filepath.Join(dir, "pid")
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, helperEnv+"_PIDFILE="+pidFile)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err == nil || cmd.ProcessState.ExitCode() != 7 {
		t.Fatalf("helper %s: %v (want it killed, exit 7)", mode, err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(string(b))
	h, err := windows.OpenProcess(windows.SYNCHRONIZE|windows.PROCESS_TERMINATE, false, uint32(pid))
	if err != nil {
		return 0 // no such process: gone
	}
	t.Cleanup(func() {
		_ = windows.TerminateProcess(h, 1)
		windows.CloseHandle(h)
	})
	return h
}

// exits reports whether the process of h ends within d.
func exits(h windows.Handle, d time.Duration) bool {
	if h == 0 {
		return true
	}
	ev, err := windows.WaitForSingleObject(h, uint32(d.Milliseconds()))
	return err == nil && ev == windows.WAIT_OBJECT_0
}

func TestChildren(t *testing.T) {
	t.Parallel()
	cases := []struct {
		mode     string
		survives bool
	}{
		// The defect the job closes: without it the suspended child
		// outlives its killed parent.
		{"uncontained", true},
		{"contained", false},
		// The Litestream guard's way out.
		{"breakaway", true},
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			h := orphan(t, tc.mode)
			if tc.survives {
				if exits(h, 2*time.Second) {
					t.Fatalf("the child of a killed %s parent is gone; want it alive", tc.mode)
				}
				return
			}
			if !exits(h, 30*time.Second) {
				t.Fatalf("the suspended child of a killed %s parent is still alive 30 s later", tc.mode)
			}
		})
	}
}

func TestChildrenOnce(t *testing.T) {
	t.Parallel()
	if in, err := InJob(windows.CurrentProcess()); err != nil || in {
		t.Skipf("the test process is in a job already (%v, %v): Children would nest or refuse", in, err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"=once")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
}
