package sandbox

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// StartConfined starts cmd confined to a from its first instruction: it
// restricts an OS thread of its own (no_new_privs, and a Landlock domain
// where the kernel has Landlock) and starts the process from that thread,
// which the child inherits. The worker then needs no re-execution, whether
// or not it links cgo; it finds the EnvConfined marker in its environment
// and checks no_new_privs before it trusts it, as after a re-exec.
//
// The thread is never handed back to the Go scheduler: it ends when reaped
// is closed. It must live until then because Linux sends the Pdeathsig of a
// child when the thread that started it ends, not the process.
//
// The domain is built afresh for each process: rules attach to inodes, and
// SQLite may have replaced a companion file since the last start.
func StartConfined(cmd *exec.Cmd, a Allowance, reaped <-chan struct{}) (Report, error) {
	type result struct {
		rep Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		// Never unlocked: a restricted thread ends with this goroutine.
		runtime.LockOSThread()
		rep, err := restrictThread(a, cmd.Path)
		if err == nil {
			env := cmd.Env
			if env == nil {
				env = os.Environ()
			}
			cmd.Env = append(withoutVars(env, EnvConfined), EnvConfined+"="+rep.encode())
			err = cmd.Start()
		}
		done <- result{rep, err}
		if err == nil {
			<-reaped
		}
	}()
	r := <-done
	return r.rep, r.err
}

// restrictThread sets no_new_privs and, where the kernel has Landlock, a
// domain for a plus what executing binary needs, on the calling thread.
func restrictThread(a Allowance, binary string) (Report, error) {
	rep := Report{Launched: true}
	ruleset, err := buildRuleset(a, &rep, func(ruleset, abi int) error {
		return allowLaunch(ruleset, abi, binary, &rep)
	})
	if err != nil {
		return rep, err
	}
	if ruleset >= 0 {
		defer unix.Close(ruleset)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return rep, fmt.Errorf("sandbox: no_new_privs: %w", err)
	}
	rep.NoNewPrivs = true
	if ruleset >= 0 {
		if _, _, e := unix.RawSyscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(ruleset), 0, 0); e != 0 {
			return rep, fmt.Errorf("sandbox: landlock_restrict_self: %w", e)
		}
		rep.Landlock = true
	}
	// The rules are long and the same for every worker; the front logs
	// them once at debug level, the worker's report need not repeat them.
	rep.Rules = nil
	return rep, nil
}

// launchFiles caches, per worker binary, the files executing it maps.
var launchFiles sync.Map // binary -> []string

// allowLaunch grants what executing binary needs: the binary, its ELF
// interpreter, the shared libraries this process maps (a worker built like
// its front maps the same ones) and the loader's cache.
func allowLaunch(ruleset, abi int, binary string, rep *Report) error {
	files, ok := launchFiles.Load(binary)
	if !ok {
		list, err := filesToLaunch(binary)
		if err != nil {
			return err
		}
		files, _ = launchFiles.LoadOrStore(binary, list)
	}
	return allowPrograms(ruleset, abi, files.([]string), rep)
}

func filesToLaunch(binary string) ([]string, error) {
	bin, err := filepath.EvalSymlinks(binary)
	if err != nil {
		return nil, fmt.Errorf("sandbox: resolve the worker binary: %w", err)
	}
	files := []string{bin}
	if interp := elfInterpreter(bin); interp != "" {
		files = append(files, interp)
	}
	mapped, err := mappedFiles()
	if err != nil {
		return nil, err
	}
	for _, m := range mapped {
		// Shared objects only: the front also maps its database's -shm.
		if strings.Contains(filepath.Base(m), ".so") && m != bin {
			files = append(files, m)
		}
	}
	return files, nil
}

// elfInterpreter returns the program interpreter (the dynamic loader) an
// ELF executable names, or "" for a static one. It reads the program
// headers by hand: debug/elf would add its packages' init to every worker,
// which links this package too.
func elfInterpreter(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var h [64]byte
	if _, err := f.ReadAt(h[:], 0); err != nil || string(h[:4]) != "\x7fELF" {
		return ""
	}
	var bo binary.ByteOrder = binary.LittleEndian
	if h[5] == 2 {
		bo = binary.BigEndian
	}
	var phoff int64
	var phentsize, phnum int
	is64 := h[4] == 2
	if is64 {
		phoff, phentsize, phnum = int64(bo.Uint64(h[0x20:])), int(bo.Uint16(h[0x36:])), int(bo.Uint16(h[0x38:]))
	} else {
		phoff, phentsize, phnum = int64(bo.Uint32(h[0x1c:])), int(bo.Uint16(h[0x2a:])), int(bo.Uint16(h[0x2c:]))
	}
	const ptInterp = 3
	ph := make([]byte, phentsize)
	for i := range min(phnum, 256) {
		if _, err := f.ReadAt(ph, phoff+int64(i*phentsize)); err != nil || len(ph) < 32 {
			return ""
		}
		if bo.Uint32(ph) != ptInterp {
			continue
		}
		var off, size int64
		if is64 {
			off, size = int64(bo.Uint64(ph[8:])), int64(bo.Uint64(ph[0x20:]))
		} else {
			off, size = int64(bo.Uint32(ph[4:])), int64(bo.Uint32(ph[16:]))
		}
		if size <= 0 || size > 4096 {
			return ""
		}
		b := make([]byte, size)
		if _, err := f.ReadAt(b, off); err != nil {
			return ""
		}
		return strings.TrimRight(string(b), "\x00")
	}
	return ""
}
