package eval

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/eval/sampledb"
)

// shopPath is a sample database shared by the tests (written in TestMain).
var shopPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "eval-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	shopPath = filepath.Join(dir, "shop.db")
	if err := sampledb.Write(context.Background(), shopPath); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
