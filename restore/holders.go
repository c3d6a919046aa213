package restore

import (
	"fmt"
	"strings"
)

// holder is another process that uses the database through SQLite, as its
// locks on the WAL index (-shm) show.
type holder struct {
	pid  int
	what string // "a write transaction", "a read transaction", ...
	// busy holders make restore refuse; the others only have the file
	// open and see the restored tables from their next transaction on.
	busy bool
}

// SQLite's WAL-index lock bytes: the unix VFS locks byte 120+i of the -shm
// file for lock slot i, and byte 128 (its "dead man switch") shared for as
// long as a connection has the WAL index open.
const (
	shmLockBase = 120
	shmSlots    = 8 // write, checkpoint, recover, 5 read marks
	shmDMS      = shmLockBase + shmSlots
)

// slotWhat names what a process holding lock slot i is doing.
func slotWhat(i int) string {
	switch i {
	case 0:
		return "a write transaction"
	case 1:
		return "a checkpoint"
	case 2:
		return "a recovery of the write-ahead log"
	}
	return "a read transaction"
}

// describe is "sqlite3 (pid 1234)", or "pid 1234" where the program's name
// is not known.
func (h holder) describe() string {
	if name := programName(h.pid); name != "" {
		return fmt.Sprintf("%s (pid %d)", name, h.pid)
	}
	return fmt.Sprintf("pid %d", h.pid)
}

// busyError is restore's refusal while other processes are in a
// transaction on db.
func busyError(db string, hs []holder) error {
	var parts []string
	for _, h := range hs {
		if h.busy {
			parts = append(parts, h.describe()+" has "+h.what+" open")
		}
	}
	if len(parts) == 0 {
		return nil
	}
	return fmt.Errorf("%s on %s; a restore would replace the tables it uses. End that transaction (COMMIT or ROLLBACK, or close the program) and run restore again. Nothing was changed", strings.Join(parts, ", "), db)
}
