//go:build linux

package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// poolConfigs are the worker pool set-ups whose windows differ: standbys
// hold connections of their own between calls (default), no process but
// the front holds one between calls (no standbys), one worker at a time.
var poolConfigs = []struct {
	name  string
	flags []string
}{
	{"default pool", nil},
	{"no standby workers", []string{"--standby-workers", "0"}},
	{"one worker", []string{"--max-workers", "1"}},
}

// acks are the append_event answers of one test: event id -> hash prefix
// and content.
type acks struct {
	t    *testing.T
	hash map[int64]string
	text map[int64]string
}

var ackRE = regexp.MustCompile(`^ok: event (\d+) appended \(hash ([0-9a-f]{12})\.\.\.\)`)

// add records one answer; an id acknowledged twice fails the test (two
// writers appended on two different WALs).
func (a *acks) add(answer, content string) {
	a.t.Helper()
	m := ackRE.FindStringSubmatch(strings.TrimSpace(answer))
	if m == nil {
		a.t.Fatalf("not an append_event answer: %q", answer)
	}
	id, _ := strconv.ParseInt(m[1], 10, 64)
	if prev, dup := a.hash[id]; dup {
		a.t.Errorf("event %d acknowledged twice: hash %s..., then %s...", id, prev, m[2])
	}
	a.hash[id], a.text[id] = m[2], content
}

// inFile checks, once every server has exited, that each acknowledged
// event is in the file with its id, hash and content, that the file passes
// PRAGMA integrity_check and that `verify` accepts the chain.
func (a *acks) inFile(db string) {
	a.t.Helper()
	c := openDirect(a.t, db)
	var check string
	if err := c.QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		a.t.Errorf("integrity_check after the server exited: %q, %v", check, err)
	}
	for id, prefix := range a.hash {
		var hash, content string
		if err := c.QueryRow(`SELECT hash, content FROM memory_events WHERE id = ?`, id).Scan(&hash, &content); err != nil {
			a.t.Errorf("acknowledged event %d is not in the file: %v", id, err)
			continue
		}
		if !strings.HasPrefix(hash, prefix) || content != a.text[id] {
			a.t.Errorf("event %d in the file: hash %s, content %q; acknowledged as %s..., %q", id, hash, content, prefix, a.text[id])
		}
	}
	if out, err := exec.Command(serverBin, "verify", "--db", db).CombinedOutput(); err != nil {
		a.t.Errorf("verify after the server exited: %v\n%s", err, out)
	}
}

// companions are the inodes of db's -wal and -shm.
func companions(t *testing.T, db string) [2]os.FileInfo {
	t.Helper()
	var out [2]os.FileInfo
	for i, suffix := range []string{"-wal", "-shm"} {
		fi, err := os.Stat(db + suffix)
		if err != nil {
			t.Fatalf("%s while the server runs: %v", filepath.Base(db+suffix), err)
		}
		out[i] = fi
	}
	return out
}

// sameCompanions fails unless db's -wal and -shm are still the files
// before were: a neighbour that believed itself the last connection
// deletes them, and the next connection makes new ones.
func sameCompanions(t *testing.T, db string, before [2]os.FileInfo, when string) {
	t.Helper()
	for i, suffix := range []string{"-wal", "-shm"} {
		fi, err := os.Stat(db + suffix)
		if err != nil {
			t.Errorf("%s %s: %v (deleted under the running server)", filepath.Base(db+suffix), when, err)
			continue
		}
		if !os.SameFile(fi, before[i]) {
			t.Errorf("%s %s is another file than the server started with (deleted and made again under it)", filepath.Base(db+suffix), when)
		}
	}
}

// neighbour is another program that uses the memory file while a server
// runs, as hooks, scripts and tools do.
type neighbour struct {
	name string
	// need skips the test, before any server starts, where the program
	// is not installed; nil: always there.
	need func(t *testing.T)
	run  func(t *testing.T, db string, a *acks)
}

func needSQLite3(t *testing.T) {
	if _, err := exec.LookPath("sqlite3"); err != nil {
		t.Skip("no sqlite3 binary on PATH (CI installs it: .ci/run)")
	}
}

var neighbours = []neighbour{
	{"read-write connection", nil, func(t *testing.T, db string, _ *acks) {
		// The test binary re-run (TestMain): a process of its own, whose
		// connection opens, reads and closes.
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), neighbourEnv+"="+db)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("neighbour connection: %v\n%s", err, out)
		}
	}},
	{"sqlite3 CLI", needSQLite3, func(t *testing.T, db string, _ *acks) {
		if out, err := exec.Command("sqlite3", "-cmd", ".timeout 5000", db, `INSERT INTO notes(x) VALUES ('from the sqlite3 CLI')`).CombinedOutput(); err != nil {
			t.Fatalf("sqlite3: %v\n%s", err, out)
		}
	}},
	{"second server", nil, func(t *testing.T, db string, a *acks) {
		content := "appended by a hook's second server"
		out, err := exec.Command(serverBin, "call", "--db", db, "append_event", fmt.Sprintf(`{"content":%q}`, content)).Output()
		if err != nil {
			t.Fatalf("call append_event: %v\n%s", err, out)
		}
		a.add(string(out), content)
	}},
	{"Litestream", func(t *testing.T) { litestreamBin(t) }, func(t *testing.T, db string, _ *acks) {
		bin := litestreamBin(t)
		dir := testDir(t)
		config := writeLitestreamConfig(t, dir, db, filepath.Join(dir, "replica"), true)
		cmd := exec.Command(bin, "replicate", "-config", config, "-once", "-log-level", "warn")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("litestream replicate -once: %v\n%s", err, out)
		}
	}},
}

// Linux only: the close trap is one of POSIX locks; on Windows SQLite's
// locks (LockFileEx) belong to a handle and no other handle's close drops
// them.

// TestNeighbours runs each kind of other program on the memory file while
// a server runs, in every pool configuration (SPEC 5.3): after it, and
// after more calls, the -wal and -shm are the files the server started
// with, no event id is acknowledged twice, the server's own checks pass,
// and once the server has exited every acknowledged event is in the file.
// The lock guard of every session (guardLocks) runs at its end too.
func TestNeighbours(t *testing.T) {
	t.Parallel()
	for _, nb := range neighbours {
		for _, pool := range poolConfigs {
			t.Run(nb.name+"/"+pool.name, func(t *testing.T) {
				t.Parallel()
				if nb.need != nil {
					nb.need(t)
				}
				db := newDB(t)
				s := start(t, db, pool.flags...)
				a := &acks{t: t, hash: map[int64]string{}, text: map[int64]string{}}
				appendSome := func(what string) {
					for i := range 3 {
						content := fmt.Sprintf("%s %d", what, i)
						a.add(s.ok("append_event", map[string]any{"content": content}), content)
						s.ok("write_query", q(fmt.Sprintf(`INSERT INTO notes(x) VALUES ('%s')`, content)))
					}
				}
				s.ok("write_query", q(`CREATE TABLE notes(id INTEGER PRIMARY KEY, x TEXT)`))
				appendSome("before the neighbour")
				files := companions(t, db)

				nb.run(t, db, a)
				sameCompanions(t, db, files, "after the neighbour")

				appendSome("after the neighbour")
				s.ok("read_query", q(`SELECT count(*) FROM notes`))
				if got := s.ok("verify_chain", nil); !strings.Contains(got, `"ok": true`) {
					t.Errorf("verify_chain while the server runs: %s", got)
				}
				sameCompanions(t, db, files, "after more calls")
				s.checkLocks()

				stopSession(t, s)
				a.inFile(db)
			})
		}
	}
}

// stopSession closes the session's stdin, as a host does, and waits until
// the server process has exited.
func stopSession(t *testing.T, s *session) {
	t.Helper()
	pid := s.cmd.Process.Pid
	_ = s.c.Close()
	if !waitFor(30*time.Second, func() bool { return !alive(pid) }) {
		t.Fatalf("server %d still runs 30 s after its stdin closed", pid)
	}
}
