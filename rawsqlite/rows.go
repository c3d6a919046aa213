package rawsqlite

import (
	"errors"
	"fmt"
)

// ErrNoRows is QueryRow's error for a query that returns no row.
var ErrNoRows = errors.New("rawsqlite: the query returned no row")

// errStop ends Each's loop from inside QueryRow; it never escapes.
var errStop = errors.New("rawsqlite: stop")

// Each prepares query, which must be exactly one statement, binds args
// to ?1, ?2, ... (see [Stmt.Bind]) and calls fn with the statement on
// every row it returns, until the rows end or fn returns an error, which
// Each returns. A nil fn steps the statement to its end, for a statement
// that returns nothing worth reading. The statement is finalized on every
// path. The error is the first of: preparing, binding, a step, fn, and
// finalizing; a step's error is the *Error SQLite gave it.
//
// The columns fn reads are valid only until fn returns (see
// [Stmt.ColumnTextView]); [Stmt.ColumnText] and [Stmt.ColumnBlob] copy.
func (c *Conn) Each(query string, fn func(*Stmt) error, args ...any) error {
	st, tail, err := c.Prepare(query)
	if err != nil {
		return err
	}
	if st == nil {
		return fmt.Errorf("rawsqlite: no statement in %q", query)
	}
	if !IsBlank(tail) {
		st.Finalize()
		return fmt.Errorf("rawsqlite: more than one statement in %q", query)
	}
	if err := st.Bind(args...); err != nil {
		st.Finalize()
		return err
	}
	if err := drain(st, fn); err != nil {
		st.Finalize()
		return err
	}
	return st.Finalize()
}

// QueryRow is [Conn.Each] for the first row only: fn is called once, with
// the first row, and the rest are never stepped. A query that returns no
// row is ErrNoRows.
func (c *Conn) QueryRow(query string, fn func(*Stmt) error, args ...any) error {
	found := false
	err := c.Each(query, func(st *Stmt) error {
		found = true
		if err := fn(st); err != nil {
			return err
		}
		return errStop
	}, args...)
	switch {
	case errors.Is(err, errStop):
		return nil
	case err == nil && !found:
		return ErrNoRows
	}
	return err
}

// drain steps st to its end, calling fn (if not nil) on every row, and
// returns the first error of a step or of fn. It leaves st to its caller
// to finalize or reset.
func drain(st *Stmt, fn func(*Stmt) error) error {
	for {
		row, err := st.Step()
		if err != nil || !row {
			return err
		}
		if fn != nil {
			if err := fn(st); err != nil {
				return err
			}
		}
	}
}

// Bind binds args to the parameters ?1, ?2, ... in order: nil as NULL,
// string as text, []byte as a blob, int, int64 and bool as integers,
// float64 as a real. Any other type is an error.
func (s *Stmt) Bind(args ...any) error {
	for i, a := range args {
		var err error
		switch v := a.(type) {
		case nil:
			err = s.BindNull(i + 1)
		case string:
			err = s.BindText(i+1, v)
		case []byte:
			err = s.BindBlob(i+1, v)
		case int64:
			err = s.BindInt64(i+1, v)
		case int:
			err = s.BindInt64(i+1, int64(v))
		case bool:
			var n int64
			if v {
				n = 1
			}
			err = s.BindInt64(i+1, n)
		case float64:
			err = s.BindDouble(i+1, v)
		default:
			err = fmt.Errorf("rawsqlite: cannot bind a %T (parameter %d)", a, i+1)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
