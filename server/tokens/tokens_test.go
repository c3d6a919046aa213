package tokens

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestAddListRevoke(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	now := time.Date(2026, 12, 2, 18, 0, 0, 0, time.UTC)
	alice, err := Add(path, "alice", now)
	if err != nil {
		t.Fatal(err)
	}
	bob, err := Add(path, "bob", now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(alice, Prefix) || len(alice) < len(Prefix)+22 || alice == bob {
		t.Fatalf("tokens %q %q: want distinct %s... tokens of >= 128 bits", alice, bob, Prefix)
	}
	if runtime.GOOS != "windows" {
		fi, _ := os.Stat(path)
		if fi.Mode().Perm() != 0o600 {
			t.Fatalf("mode %o, want 600", fi.Mode().Perm())
		}
	}
	data, _ := os.ReadFile(path)
	if strings.Contains(string(data), alice) || strings.Contains(string(data), alice[len(Prefix):]) {
		t.Fatal("the file holds the token itself")
	}
	if _, err := Add(path, "alice", now); err == nil || !strings.Contains(err.Error(), "revoke it first") {
		t.Fatalf("second add of alice: %v", err)
	}
	list, err := List(path)
	if err != nil || len(list) != 2 || list[0].Name != "alice" || !list[1].Created.Equal(now.Add(time.Minute)) {
		t.Fatalf("list: %+v %v", list, err)
	}
	set, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		token, want string
		ok          bool
	}{{alice, "alice", true}, {bob, "bob", true}, {alice + "x", "", false}, {"", "", false}, {Prefix, "", false}} {
		name, ok, err := set.Lookup(c.token)
		if err != nil || ok != c.ok || name != c.want {
			t.Errorf("Lookup(%q) = %q %v %v, want %q %v", c.token, name, ok, err, c.want, c.ok)
		}
	}
	if found, err := Revoke(path, "alice"); !found || err != nil {
		t.Fatalf("revoke: %v %v", found, err)
	}
	if found, _ := Revoke(path, "alice"); found {
		t.Fatal("revoked twice")
	}
	// The set sees the change without being reopened.
	if _, ok, _ := set.Lookup(alice); ok {
		t.Fatal("revoked token still accepted")
	}
	if name, ok, _ := set.Lookup(bob); !ok || name != "bob" {
		t.Fatal("bob lost")
	}
}

func TestNames(t *testing.T) {
	for name, ok := range map[string]bool{
		"alice": true, "ci-runner.2": true, "A_b": true, strings.Repeat("a", 64): true,
		"": false, "-x": false, "a b": false, "a@b": false, "é": false, strings.Repeat("a", 65): false, "a\n": false,
	} {
		if err := CheckName(name); (err == nil) != ok {
			t.Errorf("CheckName(%q) = %v, want ok=%v", name, err, ok)
		}
	}
}

func TestRefusedFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := "alice " + strings.Repeat("ab", 32) + " 2026-12-02T18:00:00Z\n"
	cases := map[string]struct {
		path string
		want string
	}{
		"missing":   {filepath.Join(dir, "nope"), "no such file"},
		"empty":     {write("empty", header, 0o600), "holds no token"},
		"bad hash":  {write("hash", "alice abc 2026-12-02T18:00:00Z\n", 0o600), "64 hex digits"},
		"bad field": {write("fields", "alice\n", 0o600), "fields"},
		"twice":     {write("twice", good+good, 0o600), "appears twice"},
	}
	if runtime.GOOS != "windows" {
		cases["group readable"] = struct{ path, want string }{write("group", good, 0o640), "chmod 600"}
		cases["other writable"] = struct{ path, want string }{write("other", good, 0o602), "chmod 600"}
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Open(c.path)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Open: %v, want %q", err, c.want)
			}
		})
	}
	if _, err := Open(write("good", good, 0o600)); err != nil {
		t.Fatal(err)
	}
}

// A file made unsafe while the server runs fails every lookup until fixed.
func TestSetFailsClosed(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no mode bits on Windows (PlatformNote)")
	}
	path := filepath.Join(t.TempDir(), "tokens")
	tok, err := Add(path, "alice", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	set, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := set.Lookup(tok); ok || err == nil {
		t.Fatalf("lookup with a world-readable file: %v %v", ok, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	// Chmod alone leaves size and time: the mode is part of the stamp.
	if name, ok, err := set.Lookup(tok); !ok || err != nil || name != "alice" {
		t.Fatalf("after chmod 600: %q %v %v", name, ok, err)
	}
}

// A symbolic link in the file's place is refused, even to a private
// file: at Open, by every command, and when the file is swapped for one
// while the server runs (the name's lstat is the stamp).
func TestSymlinkRefused(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	tok, err := Add(real, "alice", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Skipf("cannot make a symbolic link here: %v", err)
	}
	const want = "is a symbolic link"
	for name, f := range map[string]func() error{
		"Open":        func() error { _, err := Open(link); return err },
		"Read":        func() error { _, err := Read(link); return err },
		"List":        func() error { _, err := List(link); return err },
		"Add":         func() error { _, err := Add(link, "bob", time.Now()); return err },
		"Revoke":      func() error { _, err := Revoke(link, "alice"); return err },
		"PermProblem": func() error { return PermProblem(link) },
	} {
		t.Run(name, func(t *testing.T) {
			if err := f(); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "point --auth-tokens at the file itself") {
				t.Fatalf("%s on a link: %v, want %q", name, err, want)
			}
		})
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("a command replaced the link: %v %v", fi, err)
	}
	t.Run("swapped while open", func(t *testing.T) {
		path := filepath.Join(dir, "served")
		if err := os.Link(real, path); err != nil {
			t.Skipf("no hard links: %v", err)
		}
		set, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok, err := set.Lookup(tok); !ok || err != nil {
			t.Fatalf("before the swap: %v %v", ok, err)
		}
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(real, path); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := set.Lookup(tok); ok || err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("after the swap: %v %v", ok, err)
		}
	})
}

// Anything but a regular file is refused without blocking (a FIFO would
// block an open without O_NONBLOCK).
func TestFIFORefused(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no FIFOs")
	}
	path := filepath.Join(t.TempDir(), "fifo")
	if err := mkfifo(path); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if _, err := Open(path); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("Open of a FIFO: %v", err)
	}
}
