package memory_test

import (
	"fmt"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/memory"
)

// The canonical form keeps non-ASCII and <>& raw and escapes only what
// JSON must; the hash is its SHA-256.
func ExampleCanonical() {
	content := memory.Strip("  café <b> & \"quotes\"\n")
	fmt.Println(string(memory.Canonical(1, "2026-01-05T09:00:00Z", "20260105T090000Z-a1b2", "note", content, memory.GenesisHash)))
	// Output:
	// [1,"2026-01-05T09:00:00Z","20260105T090000Z-a1b2","note","café <b> & \"quotes\"","0000000000000000000000000000000000000000000000000000000000000000"]
}
