package tests

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The end-to-end tests run binaries that TestMain builds, so Go's test
// cache cannot see that their results depend on the server's code: without
// this import, a change to the server alone would leave `go test ./...`
// reporting the previous, cached result of this package. Importing the
// command-line package (which reaches the server, the worker and
// everything they use) makes the test binary, and so the cache key, depend
// on that code.
import _ "github.com/mcp-sqlite-memory/mcp-sqlite-memory/cli"

// goList runs `go list args...` in the module and returns its words.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH")
	}
	out, err := exec.Command(goTool, append([]string{"list"}, args...)...).Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return strings.Fields(string(out))
}

// TestShippedBuildHasNoTestHold: the spawner's hold (ipc/testhold.go),
// which blocks a server for good when an environment variable is set, is
// compiled only with -tags testhold, as TestMain builds the server; a
// build without tags (go install, scripts/release) leaves it out.
func TestShippedBuildHasNoTestHold(t *testing.T) {
	files := goList(t, "-f", "{{join .GoFiles \" \"}}", "../ipc")
	if slices.Contains(files, "testhold.go") {
		t.Errorf("a build without tags compiles ipc/testhold.go: give it the build constraint testhold")
	}
	if !slices.Contains(files, "testhold_off.go") {
		t.Errorf("a build without tags lacks ipc/testhold_off.go (files: %v)", files)
	}
	tagged := goList(t, "-tags", testTags, "-f", "{{join .GoFiles \" \"}}", "../ipc")
	if !slices.Contains(tagged, "testhold.go") {
		t.Errorf("-tags %s does not compile ipc/testhold.go (files: %v)", testTags, tagged)
	}
}
