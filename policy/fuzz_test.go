package policy

import (
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/fuzz/FuzzAuthorizeReadMode from the policy table")

// FuzzAuthorizeReadMode runs any statement in read mode and checks that the
// database file, and so the protected tables, never change. query_only is
// left off so that the authorizer, not the backstop, is what is tested.
func FuzzAuthorizeReadMode(f *testing.F) {
	f.Add("SELECT 1; DELETE FROM notes")
	f.Add("SELECT * FROM memory_events; DROP TABLE memory_events")
	f.Add("SELECT 1; PRAGMA user_version = ''")
	// A virtual table's own statements are allowed; the agent's are not.
	f.Add("SELECT * FROM boxes; INSERT INTO boxes_node VALUES (99, x'00')")
	f.Add("SELECT rtreecheck('boxes'); DELETE FROM boxes_parent")
	f.Add("PRAGMA query_only = ''; INSERT INTO notes(body) VALUES ('x')")
	f.Add("SELECT * FROM pragma_table_info('boxes'); INSERT INTO bare(bare) VALUES ('delete-all')")
	cfg := runConfig{
		template: templates.full,
		mode:     Read,
		timeout:  time.Second,
	}
	f.Fuzz(func(t *testing.T, query string) {
		out := runWith(t, cfg, query)
		if out.fileChanged {
			t.Errorf("database file changed (violation %v, error %v)", out.violation, out.err)
		}
		if out.protAfter != out.protBefore {
			t.Errorf("protected objects changed:\nbefore:\n%s\nafter:\n%s", out.protBefore, out.protAfter)
		}
		if len(out.extraFiles) > 0 {
			t.Errorf("files appeared next to the database: %v", out.extraFiles)
		}
	})
}

// TestFuzzSeeds keeps the fuzz corpus in step with the policy table; run
// with -update after changing the table.
func TestFuzzSeeds(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzAuthorizeReadMode")
	if *update {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range policyCases {
		path := filepath.Join(dir, seedName(c.name))
		// {dir} becomes a folder that does not exist, so a policy bug
		// cannot leave files in the package directory.
		query := strings.ReplaceAll(c.sql, "{dir}", "/nonexistent-policy-fuzz")
		body := "go test fuzz v1\nstring(" + strconv.Quote(query) + ")\n"
		if *update {
			if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != body {
			t.Errorf("%s is missing or stale; run go test ./policy -run TestFuzzSeeds -update", path)
		}
	}
}

func seedName(name string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, strings.ToLower(name))
}
