package snapshot

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

// checkLayout refuses a file whose record tables are missing or are not
// plain tables (a view in their place would run a query of the record's
// choosing).
func checkLayout(rec *rawsqlite.Conn) error {
	found := map[string]string{}
	err := rec.Each("SELECT name, type FROM sqlite_schema WHERE name IN ('undo_info', 'undo_changeset', 'undo_schema', 'undo_rows')", func(st *rawsqlite.Stmt) error {
		found[st.ColumnText(0)] = st.ColumnText(1)
		return nil
	})
	if err != nil {
		return hostileRead(err)
	}
	for _, t := range []string{"undo_info", "undo_changeset", "undo_schema"} {
		if found[t] != "table" {
			return hostile("%s is missing or is not a table", t)
		}
	}
	return nil
}

// hostileRead is an error reading the record's own tables: the record is
// at fault (it is not what the recorder writes).
func hostileRead(err error) error {
	var h *HostileError
	if err == nil || errors.As(err, &h) {
		return err
	}
	return hostile("it cannot be read as an undo record (%s)", sqliteWhy(err))
}

// steps' actions and the SQL keyword of each type a step may name.
var stepTypes = map[string]string{"table": "TABLE", "index": "INDEX", "view": "VIEW", "trigger": "TRIGGER"}

// checkSteps refuses undo_schema rows the recorder never writes, before
// anything runs: unknown actions or types, server names, copies that are
// not tables of the record.
func checkSteps(rec *rawsqlite.Conn, steps []step) error {
	for _, s := range steps {
		if s.action != "drop" && s.action != "create" {
			return hostile("undo_schema has action %s (want drop or create)", Printable(s.action))
		}
		if _, ok := stepTypes[s.typ]; !ok {
			return hostile("undo_schema names an object of type %s", Printable(s.typ))
		}
		for _, n := range []string{s.name, s.table} {
			if IsServerName(n) {
				return hostile("it would %s %s %s on %s, which belongs to the server or to SQLite", s.action, s.typ, Printable(s.name), Printable(s.table))
			}
		}
		if s.name == "" || (s.action == "create" && s.sql == "") {
			return hostile("undo_schema has a %s step without a name or SQL", s.action)
		}
		if s.copyName == "" {
			continue
		}
		if s.typ != "table" || s.action != "create" || len(s.columns) == 0 || !strings.HasPrefix(s.copyName, "undo_copy_") {
			return hostile("undo_schema names the copy %s for %s %s", Printable(s.copyName), s.typ, Printable(s.name))
		}
		typ := ""
		if err := rec.Each("SELECT type FROM sqlite_schema WHERE name = ?1", func(st *rawsqlite.Stmt) error {
			typ = st.ColumnText(0)
			return nil
		}, s.copyName); err != nil {
			return hostileRead(err)
		}
		if typ != "table" {
			return hostile("the copy %s of table %s is not a table of the record", Printable(s.copyName), Printable(s.name))
		}
	}
	return nil
}

// execOne runs one statement the restore built, under the guard.
func execOne(c *rawsqlite.Conn, g *guard, query string) error {
	if err := c.Each(query, nil); err != nil {
		return g.explain(err, query)
	}
	return nil
}

// limitGrowth caps how many pages the database may grow by (max_page_count)
// and returns what undoes the cap.
func limitGrowth(db *rawsqlite.Conn, maxBytes int64) (func(), error) {
	if maxBytes <= 0 {
		return func() {}, nil
	}
	pages, err := scalar(db, "PRAGMA page_count")
	if err != nil {
		return nil, err
	}
	size, err := scalar(db, "PRAGMA page_size")
	if err != nil || size <= 0 {
		return nil, fmt.Errorf("read the page size: %v", err)
	}
	old, err := scalar(db, "PRAGMA max_page_count")
	if err != nil {
		return nil, err
	}
	if err := db.Exec(fmt.Sprintf("PRAGMA max_page_count = %d", pages+maxBytes/size+1)); err != nil {
		return nil, err
	}
	return func() { _ = db.Exec(fmt.Sprintf("PRAGMA max_page_count = %d", old)) }, nil
}

// timeBudget interrupts the connections once the time is up, again and
// again until stopped (an interrupt that arrives between two statements
// is lost).
type timeBudget struct {
	once  sync.Once
	done  chan struct{}
	timer *time.Timer
	hit   atomic.Bool
}

func startBudget(d time.Duration, conns ...*rawsqlite.Conn) *timeBudget {
	b := &timeBudget{done: make(chan struct{})}
	if d <= 0 {
		return b
	}
	b.timer = time.AfterFunc(d, func() {
		b.hit.Store(true)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			for _, c := range conns {
				c.Interrupt()
			}
			select {
			case <-b.done:
				return
			case <-t.C:
			}
		}
	})
	return b
}

func (b *timeBudget) stop() {
	b.once.Do(func() {
		close(b.done)
		if b.timer != nil {
			b.timer.Stop()
		}
	})
}

// BudgetError is a restore stopped by its time or growth budget: it was
// rolled back and changed nothing.
type BudgetError struct{ Msg string }

func (e *BudgetError) Error() string { return e.Msg }

// budgetError turns an interrupt after the time budget and a full
// database under the growth cap into a BudgetError.
func (opt Options) budgetError(err error, b *timeBudget) error {
	if err == nil {
		return nil
	}
	if b.hit.Load() {
		// Whatever failed after the deadline failed because of it (an
		// interrupted compile reads as SQL that does not compile).
		return &BudgetError{Msg: fmt.Sprintf("the restore ran over its time budget of %s and was rolled back; your database was not changed. The record may hold an endless or huge query; if it is a large honest one, raise the budget (--restore-timeout)", opt.Timeout)}
	}
	var h *HostileError
	var c *ConflictError
	if errors.As(err, &h) || errors.As(err, &c) {
		return err
	}
	switch code := rawsqlite.ErrorCode(err) & 0xff; {
	case code == rawsqlite.ResultFull && opt.MaxGrowth > 0:
		return &BudgetError{Msg: fmt.Sprintf("the restore would grow the database by more than %d MiB and was rolled back; your database was not changed. The record puts back more than it holds room for; if it is a large honest one, raise --max-growth-mb", opt.MaxGrowth>>20)}
	}
	return err
}

// sqliteWhy is err for a refusal that blames a record: SQLite words a
// corrupt changeset as a corrupt database, which would blame the
// person's healthy file.
func sqliteWhy(err error) string {
	if rawsqlite.ErrorCode(err)&0xff == rawsqlite.ResultCorrupt {
		return "SQLite cannot parse it"
	}
	return Printable(err.Error())
}
