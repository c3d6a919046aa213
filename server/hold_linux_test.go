package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/config"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/snapshot"
)

// heldPOSIX reports whether this process holds a POSIX lock on path's
// inode (/proc/locks; flock locks do not count).
func heldPOSIX(t *testing.T, path string) bool {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	ino := ":" + strconv.FormatUint(fi.Sys().(*syscall.Stat_t).Ino, 10)
	f, err := os.Open("/proc/locks")
	if err != nil {
		t.Skipf("no /proc/locks: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fl := strings.Fields(sc.Text())
		if len(fl) >= 6 && fl[1] == "POSIX" && fl[4] == strconv.Itoa(os.Getpid()) && strings.HasSuffix(fl[5], ino) {
			return true
		}
	}
	return false
}

func newTestServer(t *testing.T, db string) *Server {
	t.Helper()
	// A worker that answers the start-up handshake and nothing else: these
	// tests run no statement.
	worker := filepath.Join(t.TempDir(), "handshake-only")
	script := fmt.Sprintf("#!/bin/sh\nprintf '\\006{\"v\":%d,\"ok\":false,\"code\":\"INVALID_ARGUMENT\",\"speaks\":{\"min\":%d,\"max\":%d}}\\n'\n", ipc.Version, ipc.Version, ipc.Version)
	if err := os.WriteFile(worker, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := config.Parse([]string{"--db", db, "--standby-workers", "0", "--worker", worker}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(context.Background(), cfg, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestServerKeepsItsLocks: a started server holds SQLite's POSIX locks on
// its database and -shm (nothing in New opened and closed the file by
// hand); the leftovers of a crashed snapshot are cleaned only by a server
// that is alone on the file; and shutdown closes the store before the hold.
func TestServerKeepsItsLocks(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "m.db")
	snaps := filepath.Join(dir, "m.snapshots")
	if err := os.MkdirAll(snaps, 0o700); err != nil {
		t.Fatal(err)
	}
	leftover := func() string {
		p := filepath.Join(snaps, snapshot.NewPartialName("m"))
		if err := os.WriteFile(p, []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := leftover()
	a := newTestServer(t, db)
	defer a.Close()
	if _, err := os.Stat(first); err == nil {
		t.Error("the first server on the file left a stopped snapshot's partial file")
	}
	for _, p := range []string{db, db + "-shm"} {
		if !heldPOSIX(t, p) {
			t.Errorf("a started server holds no POSIX lock on %s", filepath.Base(p))
		}
	}

	second := leftover()
	b := newTestServer(t, db)
	if _, err := os.Stat(second); err != nil {
		t.Error("a second server removed a partial file while another server ran (it may be a running snapshot's)")
	}
	for _, p := range []string{db, db + "-shm"} {
		if !heldPOSIX(t, p) {
			t.Errorf("after a second server started, no POSIX lock on %s", filepath.Base(p))
		}
	}
	b.Close()

	// The store closes (and flushes its audit rows) while the hold is
	// still open; the hold closes after it.
	order := &closeOrder{s: a}
	a.closers = append(a.closers, order)
	a.Close()
	if !order.holdOpen {
		t.Error("the hold was closed before the store and the other closers")
	}
	if a.hold != nil {
		t.Error("the hold is still open after Close")
	}
}

// closeOrder records, when closed, whether the server's hold is still open.
type closeOrder struct {
	s        *Server
	holdOpen bool
}

func (c *closeOrder) Close() error {
	if c.s.hold != nil {
		_, err := c.s.hold.Stat()
		c.holdOpen = err == nil
	}
	return nil
}
