package sampledb_test

import (
	"context"
	"errors"
	"log"
	"os"
	"path/filepath"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/eval/sampledb"
)

// The sample-db subcommand boils down to this. (Compiled, not run: a write
// takes seconds under the race detector.)
func ExampleWrite() {
	path := filepath.Join(os.TempDir(), "shop.db")
	err := sampledb.Write(context.Background(), path)
	if errors.Is(err, sampledb.ErrExists) {
		log.Fatalf("%v (choose another path or remove the file)", err)
	}
	if err != nil {
		log.Fatal(err)
	}
}
