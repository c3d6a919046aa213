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

// llmClient is the only package of the module that talks to a model API.
const llmClient = "github.com/mcp-sqlite-memory/mcp-sqlite-memory/eval/agent"

// TestServerLinksNoLLMClient: the server binary does not link the model
// API client (issue 44): the model-driven evaluation is
// cmd/mcp-sqlite-memory-eval, and the server keeps eval --scripted only.
func TestServerLinksNoLLMClient(t *testing.T) {
	for _, goos := range []string{"linux", "windows"} {
		t.Run(goos, func(t *testing.T) {
			t.Setenv("GOOS", goos)
			server := goList(t, "-deps", "../cmd/mcp-sqlite-memory")
			if !slices.Contains(server, "github.com/mcp-sqlite-memory/mcp-sqlite-memory/eval") {
				t.Fatalf("go list -deps of the server lacks package eval (eval --scripted): %d packages listed", len(server))
			}
			if slices.Contains(server, llmClient) {
				t.Errorf("the server links %s; the model run belongs to cmd/mcp-sqlite-memory-eval (go list -deps ./cmd/mcp-sqlite-memory)", llmClient)
			}
			// Nor may the client come back inside what the server links of
			// the evaluation: none of it makes HTTP requests.
			for _, pkg := range []string{"../eval", "../eval/harness", "../eval/sampledb"} {
				if imports := goList(t, "-f", "{{join .Imports \" \"}}", pkg); slices.Contains(imports, "net/http") {
					t.Errorf("%s imports net/http: the model API client is eval/agent's, which the server does not link", pkg)
				}
			}
			// The check names the right package: the eval command links it.
			if cmd := goList(t, "-deps", "../cmd/mcp-sqlite-memory-eval"); !slices.Contains(cmd, llmClient) {
				t.Errorf("cmd/mcp-sqlite-memory-eval does not link %s: has the client moved? (%d packages)", llmClient, len(cmd))
			}
		})
	}
}
