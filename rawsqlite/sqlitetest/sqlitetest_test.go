package sqlitetest

import (
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

const self = "github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite/sqlitetest"

// TestOnlyTestsImportIt: no package of the module imports this one outside
// its tests, so no binary links test helpers.
func TestOnlyTestsImportIt(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH")
	}
	for _, goos := range []string{"linux", "windows"} {
		cmd := exec.Command(goTool, "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "github.com/mcp-sqlite-memory/mcp-sqlite-memory/...")
		cmd.Env = append(os.Environ(), "GOOS="+goos)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list: %v", err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) < 10 {
			t.Fatalf("go list listed %d packages", len(lines))
		}
		for _, line := range lines {
			f := strings.Fields(line)
			if slices.Contains(f[1:], self) {
				t.Errorf("%s (GOOS=%s) imports %s outside its tests; test helpers stay out of the binaries", f[0], goos, self)
			}
		}
	}
}

func TestRowsAndText(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.db")
	ExecFile(t, path, `CREATE TABLE t (a, b); INSERT INTO t VALUES (1, 'x'), (NULL, ''), (2.5, x'6869'), ('1', NULL)`)
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := Rows(db, "SELECT a, b FROM t ORDER BY rowid")
	if err != nil {
		t.Fatal(err)
	}
	want := [][]any{{int64(1), "x"}, {nil, ""}, {2.5, []byte("hi")}, {"1", nil}}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("Rows = %#v, want %#v", rows, want)
	}
	if got := Text(rows); got != "1|x\n|\n2.5|hi\n1|\n" {
		t.Errorf("Text = %q", got)
	}
	if got, err := FileRows(path, "SELECT a FROM t WHERE b = ?", "x"); err != nil || Text(got) != "1\n" {
		t.Errorf("FileRows = %q, %v", Text(got), err)
	}
	if _, err := Rows(db, "SELECT * FROM missing"); err == nil {
		t.Error("a query on a missing table gave no error")
	}
}

func TestConnRowsTellsStorageClasses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.db")
	ExecFile(t, path, `CREATE TABLE t (v); INSERT INTO t VALUES (1), ('1'), (1.0), (NULL), (''), (x'31')`)
	c, err := rawsqlite.Open(path, rawsqlite.ReadOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rows := ConnRows(t, c, "SELECT v FROM t ORDER BY rowid")
	if len(rows) != 6 {
		t.Fatalf("rows %q", rows)
	}
	for i := range rows {
		for j := i + 1; j < len(rows); j++ {
			if rows[i] == rows[j] {
				t.Errorf("rows %d and %d read alike: %q", i, j, rows[i])
			}
		}
	}
	if rows[0] != "|1:1" || rows[1] != "|3:1" || rows[3] != "|N" {
		t.Errorf("rows %q", rows)
	}
}

func TestFileDigest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := FileDigest(t, path)
	if err := os.WriteFile(path, []byte("b"), 0o644); err != nil {
		t.Fatal(err)
	}
	if FileDigest(t, path) == a {
		t.Error("two different files have one digest")
	}
}
