package sandbox

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// childEnv makes the test binary act as a worker that enters its sandbox
// and then tries to read the files named in the variable.
const childEnv = "SANDBOX_TEST_CHILD"

// seccompChild is the child of TestRestrictSyscalls, where the
// architecture has a system call table.
var seccompChild func(calls string) int

func TestMain(m *testing.M) {
	if targets := os.Getenv(childEnv); targets != "" {
		os.Exit(child(targets))
	}
	if calls := os.Getenv("SANDBOX_TEST_SECCOMP_CALLS"); calls != "" && seccompChild != nil {
		os.Exit(seccompChild(calls))
	}
	os.Exit(m.Run())
}

type childResult struct {
	Report Report            `json:"report"`
	Reads  map[string]string `json:"reads"`
}

// child enters the sandbox from its environment, then reads every target
// from several OS threads and prints what happened.
func child(targets string) int {
	a, off, err := DecodeAllowance(os.Getenv(EnvAllowance))
	if err != nil {
		os.Stdout.WriteString(`{"error":` + quote(err.Error()) + "}\n")
		return 1
	}
	st, err := Enter(a, off, hclog.NewNullLogger())
	if err != nil {
		os.Stdout.WriteString(`{"error":` + quote(err.Error()) + "}\n")
		return 1
	}
	var names []string
	if err := json.Unmarshal([]byte(targets), &names); err != nil {
		return 2
	}
	res := childResult{Report: st.Report, Reads: map[string]string{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 4 * len(names) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			name := names[i%len(names)]
			_, err := os.ReadFile(name)
			got := "ok"
			if errors.Is(err, fs.ErrPermission) {
				got = "denied"
			} else if err != nil {
				got = err.Error()
			}
			mu.Lock()
			defer mu.Unlock()
			if prev, seen := res.Reads[name]; seen && prev != got {
				got = "threads disagree: " + prev + " / " + got
			}
			res.Reads[name] = got
		}()
	}
	wg.Wait()
	_ = json.NewEncoder(os.Stdout).Encode(res)
	return 0
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

func runChild(t *testing.T, env string, targets ...string) childResult {
	t.Helper()
	list, _ := json.Marshal(targets)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(withoutVars(os.Environ(), EnvAllowance, EnvConfined), childEnv+"="+string(list), env)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var res childResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("child output %q: %v", out, err)
	}
	return res
}

// TestApplyConfinesEveryThread fails without the sandbox: the same child
// reads the neighbour file when it is not confined.
func TestApplyConfinesEveryThread(t *testing.T) {
	if _, err := Supported(); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "m.db")
	other := filepath.Join(dir, "other.txt")
	// A WAL database header: the file format bytes 18 and 19 are 2.
	header := make([]byte, 100)
	copy(header, "SQLite format 3\x00")
	header[18], header[19] = 2, 2
	if err := os.WriteFile(db, header, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	free := runChild(t, EnvAllowance+"="+Off, db, other)
	if free.Reads[db] != "ok" || free.Reads[other] != "ok" {
		t.Fatalf("unconfined child: %v", free.Reads)
	}
	a := Allowance{DB: db, SnapshotDir: filepath.Join(dir, "snaps")}
	got := runChild(t, a.Env(), db, other, "/etc/passwd")
	if got.Reads[db] != "ok" || got.Reads[other] != "denied" || got.Reads["/etc/passwd"] != "denied" {
		t.Fatalf("confined child: %v (report %+v)", got.Reads, got.Report)
	}
	if !got.Report.Landlock || !got.Report.NoNewPrivs {
		t.Fatalf("report: %+v", got.Report)
	}
	for _, p := range []string{a.SnapshotDir, db + "-wal", db + "-shm"} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("not created before the rules: %v", err)
		}
	}
	t.Logf("report: landlock ABI %d, reexec=%v, tcp denied=%v", got.Report.ABI, got.Report.Reexec, got.Report.TCPDenied)
}

// TestMarkerIsVerified: a marker without the restriction behind it is
// refused, so an inherited variable cannot switch the sandbox off.
func TestMarkerIsVerified(t *testing.T) {
	dir := t.TempDir()
	a := Allowance{DB: filepath.Join(dir, "m.db")}
	list, _ := json.Marshal([]string{a.DB})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(withoutVars(os.Environ(), EnvAllowance, EnvConfined), childEnv+"="+string(list), a.Env(),
		EnvConfined+`={"landlock":true,"no_new_privs":true}`)
	out, err := cmd.Output()
	if err == nil {
		t.Fatalf("child trusted a forged marker: %s", out)
	}
}

// TestRollbackJournalWidens documents the one widening: a writable database
// not in WAL mode needs its journal created and deleted beside it.
func TestRollbackJournalWidens(t *testing.T) {
	if _, err := Supported(); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "m.db")
	other := filepath.Join(dir, "other.txt")
	for _, p := range []string{db, other} {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got := runChild(t, Allowance{DB: db}.Env(), other, "/etc/passwd")
	if got.Reads[other] != "ok" || got.Reads["/etc/passwd"] != "denied" || len(got.Report.Notes) != 1 {
		t.Fatalf("rollback-journal database: %v, notes %q", got.Reads, got.Report.Notes)
	}
	ro := runChild(t, Allowance{DB: db, ReadOnly: true}.Env(), db, other)
	if ro.Reads[db] != "ok" || ro.Reads[other] != "denied" || len(ro.Report.Notes) != 0 {
		t.Fatalf("read-only allowance: %v, notes %q", ro.Reads, ro.Report.Notes)
	}
}
