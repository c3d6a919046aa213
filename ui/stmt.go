package ui

import (
	"context"
	"database/sql"
	"sync"
)

// Statements are prepared once and kept: modernc's driver prepares a
// statement on every call otherwise, which was a fifth of a page's time.
// The statements are this package's own texts (filters only choose which
// constant clauses are joined), so there are a few dozen of them; the
// per-table counts of the tables page are cached up to maxCached.

const maxCached = 256

type stmtCache struct {
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

func (u *UI) prepared(ctx context.Context, q string) (*sql.Stmt, bool, error) {
	c := &u.stmts
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.m[q]; ok {
		return st, true, nil
	}
	st, err := u.db.PrepareContext(ctx, q)
	if err != nil {
		return nil, false, err
	}
	if len(c.m) >= maxCached {
		return st, false, nil // the caller closes it
	}
	if c.m == nil {
		c.m = map[string]*sql.Stmt{}
	}
	c.m[q] = st
	return st, true, nil
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.m {
		st.Close()
	}
	c.m = nil
}

// rtx is a read transaction whose statements come from the cache.
type rtx struct {
	tx    *sql.Tx
	u     *UI
	extra []*sql.Stmt // prepared beyond the cache: closed at the end
}

func (u *UI) begin(ctx context.Context) (*rtx, error) {
	tx, err := u.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	return &rtx{tx: tx, u: u}, nil
}

func (t *rtx) rollback() {
	_ = t.tx.Rollback()
	for _, st := range t.extra {
		st.Close()
	}
}

func (t *rtx) stmt(ctx context.Context, q string) (*sql.Stmt, error) {
	st, cached, err := t.u.prepared(ctx, q)
	if err != nil {
		return nil, err
	}
	if !cached {
		t.extra = append(t.extra, st)
	}
	return t.tx.StmtContext(ctx, st), nil
}

func (t *rtx) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	st, err := t.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

func (t *rtx) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	st, err := t.stmt(ctx, q)
	if err != nil {
		return t.tx.QueryRowContext(ctx, q, args...) // fails the same way
	}
	return st.QueryRowContext(ctx, args...)
}
