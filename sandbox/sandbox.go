package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// Environment variables between the front and its workers.
const (
	// EnvAllowance carries the encoded [Allowance], or "off" for
	// --sandbox off. The front sets it; a worker without it (the standalone
	// mcp-sqlite-memory-worker) confines itself only if its request asks for it.
	EnvAllowance = "MCP_SQLITE_WORKER_SANDBOX"
	// EnvConfined marks a process re-executed from a confined thread; its
	// value is the encoded [Report]. Only [Apply] sets it; the front strips
	// it from the environment it hands down.
	EnvConfined = "MCP_SQLITE_WORKER_CONFINED"
)

// Off is the value of EnvAllowance that runs workers unconfined.
const Off = "off"

// Allowance is what a confined worker may touch.
type Allowance struct {
	// DB is the absolute path of the database file. Its -wal, -shm and
	// -journal files are allowed with it.
	DB string `json:"db"`
	// ReadOnly allows reading the database only (the readonly profile).
	ReadOnly bool `json:"read_only,omitempty"`
	// SnapshotDir is the folder destructive queries back up into; empty
	// when snapshots are off. It is created if missing.
	SnapshotDir string `json:"snapshot_dir,omitempty"`
	// TempDir is where SQLite may put the temporary files of big sorts and
	// statement journals (it unlinks each right after creating it). The
	// front makes one private folder for its workers and hands it down as
	// SQLITE_TMPDIR too.
	TempDir string `json:"temp_dir,omitempty"`
	// Header, when set, reads the database file without opening it: the
	// front's hold descriptor. The front confines workers while its own
	// SQLite connections hold locks on the file, and opening and closing
	// a descriptor of it would drop them (osfile/DESIGN.md). Not handed
	// to the worker, which confines itself before it opens the database.
	Header io.ReaderAt `json:"-"`
}

// Env is the NAME=VALUE entry that hands a to a worker.
func (a Allowance) Env() string {
	b, _ := json.Marshal(a)
	return EnvAllowance + "=" + string(b)
}

// EnvTempDir is the variable SQLite reads for its temporary folder.
const EnvTempDir = "SQLITE_TMPDIR"

// DecodeAllowance decodes the value of EnvAllowance: nothing for "", off
// for Off, else the allowance.
func DecodeAllowance(v string) (a *Allowance, off bool, err error) {
	switch v {
	case "":
		return nil, false, nil
	case Off:
		return nil, true, nil
	}
	al, err := ParseAllowance(v)
	if err != nil {
		return nil, false, err
	}
	return &al, false, nil
}

// ParseAllowance decodes the value of EnvAllowance.
func ParseAllowance(s string) (Allowance, error) {
	var a Allowance
	if err := json.Unmarshal([]byte(s), &a); err != nil {
		return a, fmt.Errorf("sandbox: bad %s: %w", EnvAllowance, err)
	}
	if !filepath.IsAbs(a.DB) {
		return a, fmt.Errorf("sandbox: %s names no absolute database path", EnvAllowance)
	}
	return a, nil
}

// Companions are the files SQLite keeps beside db.
func Companions(db string) []string {
	return []string{db + "-wal", db + "-shm", db + "-journal"}
}

// Permits reports whether a request on db (opened read-only or not, backing
// up into snapshotDir, "" for none) stays inside a. Relative paths are taken
// from the working directory, which the front and its workers share.
func (a Allowance) Permits(db string, readOnly bool, snapshotDir string) error {
	if !SamePath(db, a.DB) {
		return fmt.Errorf("this worker is confined to the database %s; the request names %s", a.DB, db)
	}
	if a.ReadOnly && !readOnly {
		return fmt.Errorf("this worker may only read %s; the request opens it for writing", a.DB)
	}
	if snapshotDir != "" && !SamePath(snapshotDir, a.SnapshotDir) {
		return fmt.Errorf("this worker may write snapshots only into %q; the request names %s", a.SnapshotDir, snapshotDir)
	}
	return nil
}

// SamePath reports whether p and q name the same path once made absolute.
func SamePath(p, q string) bool {
	if p == "" || q == "" {
		return p == q
	}
	ap, err1 := filepath.Abs(p)
	aq, err2 := filepath.Abs(q)
	return err1 == nil && err2 == nil && ap == aq
}

// Report says what [Apply] put in place.
type Report struct {
	// Landlock is true when a Landlock domain restricts the process, at
	// kernel ABI version ABI.
	Landlock bool `json:"landlock"`
	ABI      int  `json:"abi,omitempty"`
	// NoNewPrivs is true when the process can gain no privileges by exec.
	NoNewPrivs bool `json:"no_new_privs"`
	// TCPDenied is true when Landlock forbids TCP bind and connect (ABI 4+).
	TCPDenied bool `json:"tcp_denied,omitempty"`
	// Scoped is true when abstract UNIX sockets and signals outside the
	// domain are denied (ABI 6+).
	Scoped bool `json:"scoped,omitempty"`
	// Reexec is true when the restriction took a re-execution (cgo builds).
	Reexec bool `json:"reexec,omitempty"`
	// Launched is true when the front confined the process before its exec
	// ([StartConfined]): no re-execution was needed.
	Launched bool `json:"launched,omitempty"`
	// Seccomp is true once the system call allowlist is installed on every
	// thread ([RestrictSyscalls]; the worker does it last, before its
	// request).
	Seccomp bool `json:"seccomp,omitempty"`
	// Missing says why Landlock is not in effect; empty when it is.
	Missing string `json:"missing,omitempty"`
	// Notes are widenings worth a log line (e.g. a rollback-journal database).
	Notes []string `json:"notes,omitempty"`
	// Rules lists the allowed paths and rights, for debugging.
	Rules []string `json:"rules,omitempty"`
}

// Options tune [Apply].
type Options struct {
	// Stdin, when not nil, becomes the standard input of the re-executed
	// process: for a worker that already read its request.
	Stdin []byte
	// Env is added to the environment of the re-executed process.
	Env []string
}

// State is what [Enter] found in the environment and did.
type State struct {
	// Allowance is what the process was restricted to; nil when no
	// allowance was given (the standalone worker, or --sandbox off).
	Allowance *Allowance
	// Off is true when the front asked for no sandbox (--sandbox off).
	Off    bool
	Report Report
}

// Enter confines the process to a (what the front handed down as
// EnvAllowance, decoded by the worker's main; off for --sandbox off) before
// it reads its request. It returns a zero State when there is neither (the
// standalone worker). On the re-exec path a successful call does not
// return in the calling process: the re-executed one returns instead.
func Enter(a *Allowance, off bool, log hclog.Logger) (*State, error) {
	if v, ok := os.LookupEnv(EnvConfined); ok {
		return resume(v, a, log)
	}
	switch {
	case off:
		log.Debug("sandbox off: this worker runs without OS confinement")
		return &State{Off: true}, nil
	case a == nil:
		return &State{}, nil
	}
	return Confine(*a, Options{}, log)
}

// Confine applies a and logs what it did; see [Apply].
func Confine(a Allowance, opt Options, log hclog.Logger) (*State, error) {
	rep, err := Apply(a, opt)
	if err != nil {
		return nil, err
	}
	logReport(log, rep)
	return &State{Allowance: &a, Report: rep}, nil
}

// resume is the re-executed process: it checks that the restriction really
// holds before it trusts the marker.
func resume(v string, a *Allowance, log hclog.Logger) (*State, error) {
	var rep Report
	if err := json.Unmarshal([]byte(v), &rep); err != nil {
		return nil, fmt.Errorf("sandbox: bad %s: %w", EnvConfined, err)
	}
	if err := verifyConfined(rep); err != nil {
		return nil, err
	}
	if a == nil {
		return nil, fmt.Errorf("sandbox: %s is set without %s", EnvConfined, EnvAllowance)
	}
	logReport(log, rep)
	return &State{Allowance: a, Report: rep}, nil
}

// logReport logs at debug: the front says once, at start, when Landlock is
// missing, so that a worker per call does not repeat it.
func logReport(log hclog.Logger, rep Report) {
	for _, n := range rep.Notes {
		log.Warn("sandbox: " + n)
	}
	log.Debug("sandbox in effect", "landlock", rep.Landlock, "abi", rep.ABI, "no_new_privs", rep.NoNewPrivs,
		"tcp_denied", rep.TCPDenied, "scoped", rep.Scoped, "reexec", rep.Reexec, "launched", rep.Launched, "missing", rep.Missing,
		"rules", strings.Join(rep.Rules, "; "))
}

// ErrUnsupported is returned by [Supported] where no OS sandbox exists.
var ErrUnsupported = errors.New("sandbox: no OS sandbox on this platform")

// withoutVars returns env minus the entries for the named variables.
func withoutVars(env []string, names ...string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		keep := true
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				keep = false
			}
		}
		if keep {
			out = append(out, kv)
		}
	}
	return out
}

// ErrNoSeccomp is wrapped by the errors of [RestrictSyscalls] and
// [SeccompSupported] where the kernel (or platform) has no seccomp
// filters: workers then run on without the system call allowlist, and the
// front says so once. Any other error from them means "do not run".
var ErrNoSeccomp = errors.New("sandbox: no seccomp filters here")
