package memory

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// sharedTestdata is the workspace's shared test data, beside the project.
const sharedTestdata = "../../shared/testdata"

// pinnedTestdata are the sha256 sums of the copies in testdata/, taken from
// ../shared/testdata when they were copied. A change to a copy (say, a
// vector edited to match a bug) fails here even where ../shared is absent.
var pinnedTestdata = map[string]string{
	"chain_vectors.json":  "13bbe2410e56ae3bdf1004b37d7091be8f3c3dcbdd472e29765851e0a54b6cd9",
	"reference-memory.db": "6d67d4099d892c2be01e1b9ae65f9c73cf8590dfd86317209c10c3e6d795abaf",
}

// TestSharedTestdata checks the project's copies of the shared test data:
// they hash to the pinned sums, and where the workspace's ../shared exists
// they are byte-identical to it. MCP_SQLITE_REQUIRE_SHARED=1 (.ci/run sets
// it) makes a missing ../shared a failure instead of a logged note.
func TestSharedTestdata(t *testing.T) {
	_, err := os.Stat(sharedTestdata)
	haveShared := err == nil
	switch {
	case !haveShared && os.Getenv("MCP_SQLITE_REQUIRE_SHARED") == "1":
		t.Fatalf("%s is missing (MCP_SQLITE_REQUIRE_SHARED=1): %v", sharedTestdata, err)
	case !haveShared:
		t.Logf("%s is not here (a clone on its own): checking the copies against their pinned sums only", sharedTestdata)
	}
	for name, want := range pinnedTestdata {
		t.Run(name, func(t *testing.T) {
			ours, err := os.ReadFile(filepath.Join("testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(ours)
			if got := hex.EncodeToString(sum[:]); got != want {
				t.Errorf("testdata/%s has sha256 %s, pinned %s: copy it again from %s and update the pin only if ../shared changed", name, got, want, sharedTestdata)
			}
			if !haveShared {
				return
			}
			theirs, err := os.ReadFile(filepath.Join(sharedTestdata, name))
			if errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("%s/%s is gone", sharedTestdata, name)
			} else if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(ours, theirs) {
				t.Errorf("testdata/%s differs from %s/%s: copy it again (cp %s/%s memory/testdata/) and update its pinned sum", name, sharedTestdata, name, sharedTestdata, name)
			}
		})
	}
}
