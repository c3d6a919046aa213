package tests

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// TestGoldenToolLists pins the MCP surface of both profiles: tool names,
// descriptions, input and output schemas, annotations. A change shows up
// as a diff to review; refresh with go test ./tests -run Golden -update.
func TestGoldenToolLists(t *testing.T) {
	t.Parallel()
	for _, profile := range []string{"memory", "readonly"} {
		t.Run(profile, func(t *testing.T) {
			db := newDB(t)
			if profile == "readonly" {
				db = shopDB(t)
			}
			s := start(t, db, "--profile", profile)
			res, err := s.c.ListTools(t.Context(), mcp.ListToolsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(res.Tools, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("testdata", "golden", "tools-"+profile+".json")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("tools/list of the %s profile differs from %s; review the change and refresh with -update\ngot:\n%s", profile, path, got)
			}
		})
	}
}
