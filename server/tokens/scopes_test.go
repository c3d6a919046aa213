package tokens

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server/scopes"
)

// A file written before scopes (three fields a line) gives every token all
// three scopes; a token with all three is written the old way, one with
// fewer carries them as a fourth field; SetScopes is seen by a running Set.
func TestScopesInTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	now := time.Date(2026, 12, 4, 18, 0, 0, 0, time.UTC)
	old := "# an older file\nalice " + strings.Repeat("ab", 32) + " 2026-12-01T10:00:00Z\n"
	if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	list, err := List(path)
	if err != nil || len(list) != 1 || !slices.Equal(list[0].Scopes, scopes.All) {
		t.Fatalf("old file: %+v %v", list, err)
	}
	reader, err := AddScoped(path, "reader", []string{scopes.Read}, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Add(path, "full", now); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	lines := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if !strings.HasPrefix(l, "#") {
			lines[strings.Fields(l)[0]] = len(strings.Fields(l))
		}
	}
	if lines["alice"] != 3 || lines["full"] != 3 || lines["reader"] != 4 {
		t.Fatalf("fields per line %v, want 3 for all scopes and 4 for fewer:\n%s", lines, data)
	}
	set, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	e, ok, err := set.Find(reader)
	if err != nil || !ok || e.Name != "reader" || !slices.Equal(e.Scopes, []string{scopes.Read}) {
		t.Fatalf("Find(reader) = %+v %v %v", e, ok, err)
	}
	// Let the file's time differ even on a coarse clock: the Set re-reads
	// on size, time, mode or identity, and the size changes here anyway.
	if found, err := SetScopes(path, "reader", []string{scopes.Write, scopes.Read}); !found || err != nil {
		t.Fatalf("SetScopes: %v %v", found, err)
	}
	if e, _, _ := set.Find(reader); !slices.Equal(e.Scopes, []string{scopes.Read, scopes.Write}) {
		t.Fatalf("after SetScopes: %v", e.Scopes)
	}
	if found, err := SetScopes(path, "nobody", scopes.All); found || err != nil {
		t.Fatalf("SetScopes(nobody) = %v %v", found, err)
	}
	if _, err := SetScopes(path, "reader", nil); err == nil {
		t.Fatal("SetScopes with no scope succeeded")
	}
	if _, err := AddScoped(path, "none", []string{"openid"}, now); err == nil {
		t.Fatal("AddScoped with no known scope succeeded")
	}
}

func TestBadScopesInTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	line := "alice " + strings.Repeat("ab", 32) + " 2026-12-01T10:00:00Z memory:read,memory:admin\n"
	if err := os.WriteFile(path, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(path); err == nil || !strings.Contains(err.Error(), "line 1") || !strings.Contains(err.Error(), "memory:admin") {
		t.Fatalf("Read = %v, want the line and the unknown scope", err)
	}
}
