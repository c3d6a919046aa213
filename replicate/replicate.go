package replicate

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	_ "modernc.org/sqlite" // registers the "sqlite" driver for hasReplicationTables

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/osfile"
)

// litestreamVersion is the Litestream release the README's recipe and the
// end-to-end tests use.
const litestreamVersion = "v0.5.18"

// Delays of --replicate, variables so that tests can shorten them.
var (
	// litestreamStopTimeout bounds each wait at shutdown: for the daemon's
	// clean stop (its own shutdown-sync-timeout defaults to 30 s) and for
	// the final `replicate -once`. Past it the process is killed.
	litestreamStopTimeout = 45 * time.Second
	// replicatorPoll is how often a server whose database is already
	// replicated by another server's Litestream checks whether it may take
	// over.
	replicatorPoll = time.Second
)

// execKey finds a top-level exec: entry in a Litestream config.
var execKey = regexp.MustCompile(`(?m)^exec[ \t]*:`)

// replicatorLockName is the file, inside Litestream's state folder, that
// one server at a time holds exclusively while its Litestream runs: two
// Litestream processes on one database would both write its replica.
const replicatorLockName = "mcp-sqlite-memory-replicator.lock"

// UsageError is a bad --replicate setting, or a config or database the
// user must fix before the server may start: the caller reports it like a
// bad command line. Its message ends with a "Try:" line.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Options are the server's settings and files that replication needs.
type Options struct {
	// Config is the Litestream config file (--replicate); "" when the
	// server does not run Litestream.
	Config string
	// Litestream is the Litestream binary (--litestream): a path, or a
	// name looked up on PATH.
	Litestream string
	// DB is the server's database, as an absolute path.
	DB string
	// ReadOnly is the readonly profile: DB is never written, and AuditDB
	// (if set) is the only file the server writes.
	ReadOnly bool
	// AuditDB is the readonly profile's --audit-db file, or "".
	AuditDB string
	// Log gets replication's messages, under the name "replication".
	Log hclog.Logger
}

// Replication runs `litestream replicate` beside the server (--replicate).
// Litestream is a child of the server, not the other way round, because
// Litestream's -exec gives its child /dev/null as stdin, which ends an MCP
// session at once. The server owns stdin and stdout; Litestream's output is
// relayed to the server's stderr, so no config can put a log line into the
// protocol stream.
//
// Litestream runs under a guard: this binary re-run as `litestream-guard`
// (see RunGuard), whose stdin is a pipe from the server. When the
// server stops, or dies, that pipe ends, and the guard stops Litestream
// cleanly and syncs once more. Pdeathsig cannot do this: as a dying
// process's threads exit one by one, the kernel signals the child again
// for each, and a second signal makes Litestream skip its final sync.
//
// Several servers may share one database (SPEC 5); one of them replicates
// it at a time: the one holding the replicator lock. The others wait and
// take over when it stops. The guard inherits the lock, and the server's
// shared lock on the database (on Unix), so neither is released before
// Litestream has finished, even when the server is killed.
//
// Plan returns it before the server opens anything, Start runs it once the
// server's files are open, and Close stops it after the server has closed
// its own connections.
type Replication struct {
	log    hclog.Logger
	bin    string   // "" without --replicate
	config string   // "" without --replicate
	dbs    []string // the files this server writes, all listed in config
	hold   *os.File // the server's shared lock on the database
	lock   *os.File // the replicator lock file, locked or not; nil until started

	mu       sync.Mutex
	locked   bool      // this server holds the replicator lock
	guard    *exec.Cmd // once started
	stdin    io.Closer // the guard's stdin: closing it stops replication
	exited   chan struct{}
	stopping bool
	stop     chan struct{} // ends the takeover loop
	loopDone chan struct{}
}

// Plan checks --replicate before the server opens or creates any file, so
// that a bad setting leaves nothing behind: the Litestream binary, a config
// that `litestream databases` reads and that lists exactly the files this
// server writes, and no fresh file about to overwrite a replica's newest
// state. Without --replicate it checks nothing. A setting the user must fix
// comes back as *UsageError.
func Plan(ctx context.Context, o Options) (*Replication, error) {
	log := o.Log
	if log == nil {
		log = hclog.NewNullLogger()
	}
	want := o.writtenFiles()
	r := &Replication{log: log.Named("replication"), dbs: want}
	if o.Config == "" {
		return r, nil
	}
	if len(want) == 0 {
		return nil, &UsageError{"--replicate: the readonly profile writes nothing to replicate but its --audit-db file\nTry: --audit-db ./audit.db (and list it in the Litestream config), or drop --replicate"}
	}
	config, err := filepath.Abs(o.Config)
	if err != nil {
		return nil, err
	}
	text, err := os.ReadFile(config)
	if err != nil {
		return nil, &UsageError{fmt.Sprintf("--replicate: cannot read the Litestream config: %v\nTry: --replicate ~/.config/mcp-sqlite-memory/litestream.yml (see docs/replication.md)", err)}
	}
	if execKey.Match(text) {
		return nil, &UsageError{fmt.Sprintf("--replicate: %s has an exec: entry; with --replicate the server runs Litestream itself (and Litestream's exec gives its child no stdin)\nTry: remove the exec: line", config)}
	}
	bin, err := exec.LookPath(o.Litestream)
	if err != nil {
		return nil, &UsageError{fmt.Sprintf("--replicate: Litestream not found (%v)\nTry: go install github.com/benbjohnson/litestream/cmd/litestream@%s, then --litestream PATH if it is not on PATH", err, litestreamVersion)}
	}
	listed, err := litestreamDatabases(ctx, bin, config)
	if err != nil {
		return nil, err
	}
	if err := checkListed(config, listed, want, o.DB); err != nil {
		return nil, err
	}
	for _, db := range want {
		if err := checkOrigin(ctx, bin, config, db); err != nil {
			return nil, err
		}
	}
	r.bin, r.config = bin, config
	return r, nil
}

// Start starts Litestream as planned, once the server's files are open;
// hold is the server's shared lock on the database, which the guard
// inherits. Without --replicate it only speaks up when the database
// carries Litestream state, as a reminder that nothing here replicates it.
// Close r even when Start fails: a server that got the replicator lock
// but could not start the guard still syncs once at Close.
func (r *Replication) Start(hold *os.File) error {
	if r.config == "" {
		for _, db := range r.dbs {
			if dir := litestreamMetaDir(db); isDir(dir) {
				r.log.Info("this database has Litestream state but --replicate is not set: it is replicated only if a Litestream service runs beside this server", "db", db, "litestream_state", dir)
			}
		}
		return nil
	}
	// Beside the file's real path, so that servers reaching it through
	// different symbolic links still share one lock.
	dir := litestreamMetaDir(canonicalPath(r.dbs[0]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--replicate: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, replicatorLockName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("--replicate: %w", err)
	}
	r.hold, r.lock = hold, lock
	r.stop, r.loopDone = make(chan struct{}), make(chan struct{})
	if err := r.tryStart(); err != nil {
		close(r.loopDone)
		return err
	}
	if r.running() {
		close(r.loopDone)
	} else {
		r.log.Info("another server on this database runs Litestream; it replicates this server's writes too, and this server takes over when it stops", "db", strings.Join(r.dbs, ","))
		go r.takeOver()
	}
	return nil
}

// checkListed insists that the config replicates exactly the files this
// server writes: a database listed beyond them would get a second
// Litestream from another server, and the readonly profile's database must
// never be written (Litestream switches a database to WAL and adds tables).
func checkListed(config string, listed, want []string, readonlyDB string) error {
	for _, db := range want {
		if !containsFile(listed, db) {
			return &UsageError{fmt.Sprintf("--replicate: %s does not replicate %s (it lists %s)\nTry: list it under dbs: in the config:\n  - path: %s\n    replica:\n      url: file:///path/to/replica", config, db, listOrNone(listed), db)}
		}
	}
	for _, db := range listed {
		if containsFile(want, db) {
			continue
		}
		if canonicalPath(db) == canonicalPath(readonlyDB) {
			return &UsageError{fmt.Sprintf("--replicate: %s lists the read-only database %s; Litestream writes to every database it replicates (WAL mode, its own tables)\nTry: replicate only the --audit-db file", config, db)}
		}
		return &UsageError{fmt.Sprintf("--replicate: %s also lists %s; the server runs Litestream for its own files only (%s)\nTry: one config per server; replicate other databases with a Litestream service of their own", config, db, strings.Join(want, ", "))}
	}
	return nil
}

// checkOrigin refuses to replicate a file that has nothing to do with a
// replica that already holds a database: a file that was never replicated
// from this path (no Litestream state folder beside it) and never restored
// from a replica (no _litestream_seq table in it). That is a new machine
// started before its restore, or a second machine with a memory of its own
// pointed at the same replica: the file would become the replica's newest
// state, and the memory there would survive only in the replica's history
// until retention removes it. A snapshot restored over a file that was
// replicated before keeps its state folder and passes.
func checkOrigin(ctx context.Context, bin, config, db string) error {
	if isDir(litestreamMetaDir(db)) || isDir(litestreamMetaDir(canonicalPath(db))) {
		return nil
	}
	if _, err := os.Stat(db); err == nil {
		restored, err := hasReplicationTables(ctx, db)
		if err != nil || restored {
			return err
		}
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "ltx", "-config", config, "-json", "-level", "all", db)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("--replicate: list the replica of %s: %v: %s", db, err, strings.TrimSpace(stderr.String()))
	}
	var files []json.RawMessage
	if err := json.Unmarshal(stdout.Bytes(), &files); err != nil {
		return fmt.Errorf("--replicate: unexpected output of litestream ltx (Litestream %s expected): %w", litestreamVersion, err)
	}
	if len(files) == 0 {
		return nil
	}
	return &UsageError{fmt.Sprintf("--replicate: the replica of %s already holds a database, and this file was never replicated from here nor restored from it: replicating it would make it the replica's newest state\nTry: litestream restore -config %s %s   (move an existing file away first), or give this database a replica of its own", db, config, db)}
}

// hasReplicationTables reports whether Litestream has ever replicated the
// file: it adds _litestream_seq, which a restore from a replica carries.
func hasReplicationTables(ctx context.Context, path string) (bool, error) {
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(path), RawQuery: "mode=ro&_pragma=busy_timeout(5000)"}
	if runtime.GOOS == "windows" && !strings.HasPrefix(u.Path, "/") {
		u.Path = "/" + u.Path
	}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return false, err
	}
	defer db.Close()
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = '_litestream_seq'`).Scan(&n); err != nil {
		return false, fmt.Errorf("--replicate: read %s: %w", path, err)
	}
	return n > 0, nil
}

// writtenFiles are the files this server writes: the memory database, or
// the readonly profile's --audit-db file (if any).
func (o Options) writtenFiles() []string {
	if !o.ReadOnly {
		return []string{o.DB}
	}
	if o.AuditDB == "" {
		return nil
	}
	abs, err := filepath.Abs(o.AuditDB)
	if err != nil {
		return nil
	}
	return []string{abs}
}

// litestreamDatabases runs `litestream databases -json`, which reads and
// validates the config exactly as `replicate` will, and returns the paths.
func litestreamDatabases(ctx context.Context, bin, config string) ([]string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "databases", "-config", config, "-json")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return nil, &UsageError{fmt.Sprintf("--replicate: Litestream refuses %s: %s\nTry: litestream databases -config %s   (Litestream %s; see docs/replication.md)", config, msg, config, litestreamVersion)}
	}
	var dbs []struct {
		Path string `json:"path"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &dbs); err != nil {
		return nil, fmt.Errorf("--replicate: unexpected output of litestream databases (Litestream %s expected): %w", litestreamVersion, err)
	}
	var paths []string
	for _, d := range dbs {
		if d.Path != "" && !slices.Contains(paths, d.Path) {
			paths = append(paths, d.Path)
		}
	}
	return paths, nil
}

// containsFile reports whether list names file, comparing absolute paths
// with symbolic links resolved where the files exist (on Windows that also
// settles the case of the letters). Not os.SameFile: SQLite names its -wal
// and -shm after the path, so a hard link is another database to it.
func containsFile(list []string, file string) bool {
	want := canonicalPath(file)
	for _, p := range list {
		if canonicalPath(p) == want {
			return true
		}
	}
	return false
}

func canonicalPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	if real, err := filepath.EvalSymlinks(p); err == nil {
		p = real
	}
	return filepath.Clean(p)
}

func listOrNone(list []string) string {
	if len(list) == 0 {
		return "no database by path"
	}
	return strings.Join(list, ", ")
}

// litestreamMetaDir is where Litestream v0.5 keeps a database's local
// state: ".<name>-litestream" beside it.
func litestreamMetaDir(db string) string {
	return filepath.Join(filepath.Dir(db), "."+filepath.Base(db)+"-litestream")
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// tryStart takes the replicator lock if it is free and starts the guard.
// Without the lock it does nothing and returns nil.
func (r *Replication) tryStart() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopping || r.guard != nil {
		return nil
	}
	if !r.locked {
		if err := osfile.LockExclusive(r.lock); errors.Is(err, osfile.ErrHeld) {
			return nil
		} else if err != nil {
			return fmt.Errorf("--replicate: lock %s: %w", r.lock.Name(), err)
		}
		r.locked = true
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("--replicate: cannot find my own executable to run the Litestream guard: %w", err)
	}
	guard := exec.Command(self, GuardCommand, r.bin, r.config)
	guard.Stdout, guard.Stderr = os.Stderr, os.Stderr
	stdin, err := guard.StdinPipe()
	if err != nil {
		return err
	}
	prepareLitestream(guard, r.hold, r.lock)
	if err := guard.Start(); err != nil {
		return fmt.Errorf("--replicate: start the Litestream guard: %w", err)
	}
	r.guard, r.stdin, r.exited = guard, stdin, make(chan struct{})
	go r.wait(guard, r.exited)
	r.log.Info("replicating with Litestream; it is stopped with a final sync when this server stops",
		"db", strings.Join(r.dbs, ","), "config", r.config, "litestream", r.bin, "guard_pid", guard.Process.Pid)
	return nil
}

func (r *Replication) running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.guard != nil
}

// takeOver waits for the replicator lock and starts Litestream once it is
// free: the server that held it has stopped, and its Litestream with it.
func (r *Replication) takeOver() {
	defer close(r.loopDone)
	t := time.NewTicker(replicatorPoll)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
		}
		if err := r.tryStart(); err != nil {
			r.log.Error("cannot take over replication; this server's writes reach the replica through the next server that runs Litestream", "error", err)
			return
		}
		if r.running() {
			r.log.Info("took over replication from a server that stopped")
			return
		}
	}
}

// wait reaps the guard. It exits by itself only when Litestream has
// exited, which deserves a loud error: the database is then no longer
// replicated.
func (r *Replication) wait(guard *exec.Cmd, exited chan struct{}) {
	err := guard.Wait()
	r.mu.Lock()
	stopping := r.stopping
	r.mu.Unlock()
	close(exited)
	if !stopping {
		r.log.Error("Litestream exited: the database is NO LONGER REPLICATED; its own messages are above in this log; restart the MCP session once the config is fixed",
			"db", strings.Join(r.dbs, ","), "status", exitStatus(err))
	}
}

// Close ends replication when the server has closed its own connections:
// it closes the guard's stdin, and the guard stops Litestream (which syncs
// what is left) and runs `litestream replicate -once`. A server that never
// got the replicator lock makes one last attempt for it and syncs once if
// it gets it; if another server still holds it, that server's Litestream
// syncs these writes too.
func (r *Replication) Close() error {
	if r.lock == nil { // not started, or without --replicate
		return nil
	}
	r.mu.Lock()
	if r.stopping {
		r.mu.Unlock()
		return nil
	}
	r.stopping = true
	guard, stdin, exited := r.guard, r.stdin, r.exited
	r.mu.Unlock()
	close(r.stop)
	<-r.loopDone
	defer r.lock.Close()

	if guard != nil {
		_ = stdin.Close()
		select {
		case <-exited:
		case <-time.After(2*litestreamStopTimeout + 10*time.Second):
			// The guard bounds its own waits; this is a backstop.
			r.log.Error("the Litestream guard did not finish; killed", "guard_pid", guard.Process.Pid)
			_ = guard.Process.Kill()
			<-exited
		}
		return nil
	}
	if osfile.LockExclusive(r.lock) != nil {
		r.log.Info("another server's Litestream replicates this database; it syncs this session's writes")
		return nil
	}
	litestreamOnce(r.bin, r.config, r.log, os.Stderr, r.hold, r.lock)
	return nil
}

// litestreamOnce runs `litestream replicate -once`, which opens every
// database of the config, syncs it to its replica and exits.
func litestreamOnce(bin, config string, log hclog.Logger, out io.Writer, locks ...*os.File) {
	cmd := exec.Command(bin, "replicate", "-config", config, "-once", "-log-level", "warn")
	cmd.Stdout, cmd.Stderr = out, out
	prepareLitestream(cmd, locks...)
	if err := cmd.Start(); err != nil {
		log.Error("final sync: cannot start Litestream; the last writes reach the replica when the next session starts", "error", err)
		return
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(litestreamStopTimeout):
		_ = cmd.Process.Kill()
		err = fmt.Errorf("no answer after %s; killed: %w", litestreamStopTimeout, <-done)
	}
	if err != nil {
		log.Error("final sync failed; the last writes reach the replica when the next session starts; Litestream's messages are above", "status", exitStatus(err))
		return
	}
	log.Info("final sync done: the replica has every write so far", "config", config)
}

func exitStatus(err error) string {
	if err == nil {
		return "0"
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ProcessState.String()
	}
	return err.Error()
}
