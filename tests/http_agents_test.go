package tests

import (
	"bytes"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHTTPTokenFileSymlink: a symbolic link in place of --auth-tokens is
// refused, even to a private file: at start (exit 2, saying why) and when
// the file is swapped for one while the server runs (every token fails,
// the log says why).
func TestHTTPTokenFileSymlink(t *testing.T) {
	t.Parallel()
	dir := testDir(t)
	real := filepath.Join(dir, "tokens.real")
	addToken(t, real, "alice")
	link := filepath.Join(dir, "tokens.link")
	if err := os.Symlink(real, link); err != nil {
		t.Skipf("cannot make a symbolic link here: %v", err)
	}
	cmd := exec.Command(serverBin, "--db", filepath.Join(dir, "memory.db"), "--http", "127.0.0.1:0", "--auth-tokens", link)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), "is a symbolic link") || !strings.Contains(stderr.String(), "point --auth-tokens at the file itself") {
		t.Fatalf("start with a linked token file: %v\n%s", err, stderr.String())
	}

	db := newDB(t)
	h := startHTTP(t, db, []string{"alice"})
	auth := map[string]string{"Authorization": "Bearer " + h.token["alice"]}
	if status, _, body := h.rawRequest(t, http.MethodPost, "/mcp", auth, initializeBody); status != 200 {
		t.Fatalf("initialize before the swap: %d %s", status, body)
	}
	moved := h.tokens + ".real"
	if err := os.Rename(h.tokens, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(moved, h.tokens); err != nil {
		t.Fatal(err)
	}
	if status, _, body := h.rawRequest(t, http.MethodPost, "/mcp", auth, initializeBody); status != 401 {
		t.Fatalf("initialize after the file became a link: %d %s", status, body)
	}
	if !waitFor(10*time.Second, func() bool { return strings.Contains(h.log.String(), "is a symbolic link") }) {
		t.Fatalf("the log does not say why every token fails:\n%s", tail(h.log.String(), 3000))
	}
}
