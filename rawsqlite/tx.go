package rawsqlite

// Tx is a write transaction begun with BEGIN IMMEDIATE: the one shape of
// "take the write lock, roll back unless committed" that the worker's
// writes, previews and views and undo's apply share.
//
//	tx, err := c.BeginImmediate()
//	if err != nil {
//		return err
//	}
//	defer tx.Rollback() // a no-op once committed
//	...
//	return tx.Commit()
type Tx struct {
	c    *Conn
	done bool
}

// BeginImmediate begins a write transaction, taking the write lock at once
// (so a busy database fails here, before any work).
func (c *Conn) BeginImmediate() (*Tx, error) {
	if err := c.Exec("BEGIN IMMEDIATE"); err != nil {
		return nil, err
	}
	return &Tx{c: c}, nil
}

// Commit commits the transaction. When COMMIT fails the transaction is
// still open, and Rollback ends it.
func (t *Tx) Commit() error {
	if err := t.c.Exec("COMMIT"); err != nil {
		return err
	}
	t.done = true
	return nil
}

// Rollback rolls the transaction back unless Commit or Rollback ended it.
// Its error is dropped: it runs on the way out of a failure, which is what
// the caller reports, and SQLite may already have rolled back (an
// out-of-memory error or an interrupt can end the transaction).
func (t *Tx) Rollback() {
	if !t.done {
		t.done = true
		_ = t.c.Exec("ROLLBACK")
	}
}
