package tests

import (
	"fmt"
	"strings"
	"testing"
)

// TestHTTPNeighbours: the other programs of TestNeighbours (a connection,
// the sqlite3 CLI, a hook's `call`, Litestream) on the file of an HTTP
// server: its -wal and -shm stay the files it started with, no event id
// is acknowledged twice, the lock guard holds, and after SIGTERM every
// acknowledged event is in the file.
func TestHTTPNeighbours(t *testing.T) {
	t.Parallel()
	for _, nb := range neighbours {
		t.Run(nb.name, func(t *testing.T) {
			t.Parallel()
			if nb.need != nil {
				nb.need(t)
			}
			db := newDB(t)
			h := startHTTP(t, db, []string{"alice"})
			s := h.connect(t, "alice", false)
			a := &acks{t: t, hash: map[int64]string{}, text: map[int64]string{}}
			appendSome := func(what string) {
				for i := range 3 {
					content := fmt.Sprintf("%s %d", what, i)
					a.add(s.ok("append_event", map[string]any{"content": content}), content)
					s.ok("write_query", q(fmt.Sprintf(`INSERT INTO notes(x) VALUES ('%s')`, content)))
				}
			}
			s.ok("write_query", q(`CREATE TABLE notes(id INTEGER PRIMARY KEY, x TEXT)`))
			appendSome("before the neighbour")
			files := companions(t, db)
			nb.run(t, db, a)
			sameCompanions(t, db, files, "after the neighbour")
			appendSome("after the neighbour")
			if got := s.ok("verify_chain", nil); !strings.Contains(got, `"ok": true`) {
				t.Errorf("verify_chain while the server runs: %s", got)
			}
			sameCompanions(t, db, files, "after more calls")
			s.checkLocks()
			stopProcess(h.cmd, h.done)
			a.inFile(db)
		})
	}
}
