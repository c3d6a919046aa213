package tests

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// testDir is t.TempDir for this package: a fresh folder removed when the
// test ends. t.TempDir's own cleanup deletes with POSIX semantics, which
// Wine 8 answers with "Invalid function", so under Wine every test would
// fail its cleanup; removeTree falls back to plain deletes there (see
// tempdir_windows_test.go). Everywhere else it is os.RemoveAll.
func testDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", sanitizedName(t.Name())+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// A process that just exited may hold its files a moment longer
		// on Windows, as t.TempDir allows for.
		deadline := time.Now().Add(2 * time.Second)
		for {
			err := removeTree(dir)
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("remove test folder %s: %v", dir, err)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	return dir
}

var unsafeNameChars = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

func sanitizedName(name string) string {
	name = unsafeNameChars.ReplaceAllString(name, "_")
	if len(name) > 64 {
		name = name[:64]
	}
	return name
}

// TestNoTTempDir keeps the package on testDir: one t.TempDir left in a
// test fails that test under Wine.
func TestNoTTempDir(t *testing.T) {
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	call := regexp.MustCompile(`\b[tb]\.TempDir\(\)`)
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if f == "tempdir_test.go" {
			continue
		}
		for _, m := range call.FindAllIndex(src, -1) {
			t.Errorf("%s: %s: use testDir(t) (t.TempDir's cleanup fails under Wine)", f, src[m[0]:m[1]])
		}
	}
}
