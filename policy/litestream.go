package policy

import (
	"fmt"
	"strings"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

// IsReplicationTable reports whether name is one of the tables Litestream
// adds to every database it replicates (docs/replication.md):
// (names compare as SQLite compares them, ASCII case only):
// _litestream_seq, a counter it bumps to force a write into the WAL, and
// _litestream_lock, which it writes in a rolled-back transaction to hold
// the write lock around its checkpoints. They are readable; changing or
// dropping them breaks replication until Litestream restarts, so no tool
// may write them.
func IsReplicationTable(name string) bool {
	return strings.HasPrefix(rawsqlite.FoldName(name), "_litestream_")
}

// replication refuses a write or schema change of a Litestream table.
func (a *Authorizer) replication(what, table, trigger string) *errcode.Error {
	msg := fmt.Sprintf("%s on %s is not allowed in any tool: Litestream, which replicates this database, keeps its state there", what, table)
	if trigger != "" {
		msg += fmt.Sprintf(" (trigger %s writes to it)", trigger)
	}
	return a.policy(msg)
}
