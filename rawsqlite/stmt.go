package rawsqlite

import (
	"math"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// Stmt is a prepared statement. It belongs to its Conn's goroutine and must
// be finalized, also after errors. Column indexes count from 0, bind
// parameter indexes from 1, as in SQLite.
type Stmt struct {
	c *Conn
	p uintptr
}

// Step evaluates the statement up to the next row (row == true) or to
// completion (row == false). Errors carry sqlite3_errmsg, e.g.
// "interrupted" or "database or disk is full".
func (s *Stmt) Step() (row bool, err error) {
	if err := s.usable(); err != nil {
		return false, err
	}
	switch rc := sqlite3.Xsqlite3_step(s.c.tls, s.p); rc {
	case sqlite3.SQLITE_ROW:
		return true, nil
	case sqlite3.SQLITE_DONE:
		return false, nil
	case sqlite3.SQLITE_INTERRUPT, sqlite3.SQLITE_NOMEM:
		// The progress handler's stop ends as either: SQLite reports
		// NOMEM when the unwinding finds the failure.
		if s.c.oomStop && stopped.Load() {
			return false, ErrStoppedAtHeapLimit
		}
		if s.c.oomStop && rc == sqlite3.SQLITE_NOMEM {
			// Met the heap limit between two of the watch's checks.
			checkHighMark(s.c.tls, true)
		}
		return false, s.c.errorFor(rc)
	default:
		return false, s.c.errorFor(rc)
	}
}

var errFinalized = &Error{Code: ResultMisuse, Msg: "rawsqlite: statement is finalized"}

// usable refuses statements that are finalized or whose Conn is closed
// (SQLite keeps such a connection only as a zombie, until finalization).
func (s *Stmt) usable() error {
	switch {
	case s.p == 0:
		return errFinalized
	case s.c.closed:
		return errClosed
	}
	return nil
}

// Reset rewinds the statement so that it can be stepped again; bindings
// stay. Like sqlite3_reset, it returns the error of the last Step, if that
// failed.
func (s *Stmt) Reset() error {
	if err := s.usable(); err != nil {
		return err
	}
	return s.check(sqlite3.Xsqlite3_reset(s.c.tls, s.p))
}

// ClearBindings sets every parameter back to NULL.
func (s *Stmt) ClearBindings() error {
	if err := s.usable(); err != nil {
		return err
	}
	return s.check(sqlite3.Xsqlite3_clear_bindings(s.c.tls, s.p))
}

// Finalize destroys the statement. Like sqlite3_finalize, it returns the
// error of the last Step, if that failed; the statement is gone either way.
// Finalize on a finalized statement does nothing.
func (s *Stmt) Finalize() error {
	if s.p == 0 {
		return nil
	}
	c := s.c
	rc := sqlite3.Xsqlite3_finalize(c.tls, s.p)
	s.p = 0
	var err error
	if rc != sqlite3.SQLITE_OK {
		if c.closed {
			err = errorFromCode(rc)
		} else {
			err = c.errorFor(rc)
		}
	}
	c.stmts--
	if c.closed && c.stmts == 0 {
		c.mu.Lock()
		c.release()
		c.mu.Unlock()
	}
	return err
}

func (s *Stmt) check(rc int32) error {
	if rc == sqlite3.SQLITE_OK {
		return nil
	}
	return s.c.errorFor(rc)
}

// ColumnCount returns the number of result columns (0 for statements that
// return no data).
func (s *Stmt) ColumnCount() int {
	if s.p == 0 {
		return 0
	}
	return int(sqlite3.Xsqlite3_column_count(s.c.tls, s.p))
}

// ColumnName returns the name of result column i ("" if out of range).
func (s *Stmt) ColumnName(i int) string {
	if s.p == 0 {
		return ""
	}
	return libc.GoString(sqlite3.Xsqlite3_column_name(s.c.tls, s.p, int32(i)))
}

// ColumnDeclType returns the declared type of result column i when it is
// a table column, else "" (expressions, out of range).
func (s *Stmt) ColumnDeclType(i int) string {
	if s.p == 0 {
		return ""
	}
	return libc.GoString(sqlite3.Xsqlite3_column_decltype(s.c.tls, s.p, int32(i)))
}

// ColumnType returns the storage class (TypeInteger ... TypeNull) of column
// i in the current row. Call it before any other Column* accessor for that
// column: those may convert the value.
func (s *Stmt) ColumnType(i int) int {
	if s.p == 0 {
		return TypeNull
	}
	return int(sqlite3.Xsqlite3_column_type(s.c.tls, s.p, int32(i)))
}

// ColumnInt64 returns column i of the current row as an integer.
func (s *Stmt) ColumnInt64(i int) int64 {
	if s.p == 0 {
		return 0
	}
	return sqlite3.Xsqlite3_column_int64(s.c.tls, s.p, int32(i))
}

// ColumnDouble returns column i of the current row as a float.
func (s *Stmt) ColumnDouble(i int) float64 {
	if s.p == 0 {
		return 0
	}
	return sqlite3.Xsqlite3_column_double(s.c.tls, s.p, int32(i))
}

// ColumnText returns column i of the current row as UTF-8 text, copied
// once into a Go string. NULL reads as "".
func (s *Stmt) ColumnText(i int) string {
	if s.p == 0 {
		return ""
	}
	p := sqlite3.Xsqlite3_column_text(s.c.tls, s.p, int32(i))
	n := int(sqlite3.Xsqlite3_column_bytes(s.c.tls, s.p, int32(i)))
	if p == 0 || n <= 0 {
		return ""
	}
	return string(cmem(p, n))
}

// ColumnTextView returns column i of the current row as UTF-8 text
// without copying it: the slice aliases SQLite's memory and is valid only
// until the statement is stepped, reset or finalized, or another accessor
// converts this column. Callers that keep the text must copy it (or use
// ColumnText). NULL and the empty string both read as nil.
func (s *Stmt) ColumnTextView(i int) []byte {
	if s.p == 0 {
		return nil
	}
	p := sqlite3.Xsqlite3_column_text(s.c.tls, s.p, int32(i))
	n := int(sqlite3.Xsqlite3_column_bytes(s.c.tls, s.p, int32(i)))
	if p == 0 || n <= 0 {
		return nil
	}
	return cmem(p, n)
}

// ColumnBlob returns a copy of column i of the current row as bytes. NULL
// and empty values both read as nil; use ColumnType to tell them apart.
func (s *Stmt) ColumnBlob(i int) []byte {
	if s.p == 0 {
		return nil
	}
	p := sqlite3.Xsqlite3_column_blob(s.c.tls, s.p, int32(i))
	n := int(sqlite3.Xsqlite3_column_bytes(s.c.tls, s.p, int32(i)))
	if p == 0 || n <= 0 {
		return nil
	}
	b := make([]byte, n)
	copy(b, cmem(p, n))
	return b
}

// ColumnBytes returns the size in bytes of column i of the current row, as
// text for TEXT values and as bytes for BLOBs (sqlite3_column_bytes).
func (s *Stmt) ColumnBytes(i int) int {
	if s.p == 0 {
		return 0
	}
	return int(sqlite3.Xsqlite3_column_bytes(s.c.tls, s.p, int32(i)))
}

// Readonly reports whether the statement makes no direct change to the
// database file (sqlite3_stmt_readonly). BEGIN, COMMIT and SAVEPOINT count
// as read-only; a SELECT calling a function with side effects counts too.
func (s *Stmt) Readonly() bool {
	if s.p == 0 {
		return false
	}
	return sqlite3.Xsqlite3_stmt_readonly(s.c.tls, s.p) != 0
}

// IsExplain returns 1 for EXPLAIN, 2 for EXPLAIN QUERY PLAN, else 0.
func (s *Stmt) IsExplain() int {
	if s.p == 0 {
		return 0
	}
	return int(sqlite3.Xsqlite3_stmt_isexplain(s.c.tls, s.p))
}

// SQL returns the text of the statement as prepared, without the tail.
func (s *Stmt) SQL() string {
	if s.p == 0 {
		return ""
	}
	return libc.GoString(sqlite3.Xsqlite3_sql(s.c.tls, s.p))
}

// BindParameterCount returns the index of the largest parameter.
func (s *Stmt) BindParameterCount() int {
	if s.p == 0 {
		return 0
	}
	return int(sqlite3.Xsqlite3_bind_parameter_count(s.c.tls, s.p))
}

// BindInt64 binds v to parameter i.
func (s *Stmt) BindInt64(i int, v int64) error {
	if err := s.usable(); err != nil {
		return err
	}
	return s.check(sqlite3.Xsqlite3_bind_int64(s.c.tls, s.p, int32(i), v))
}

// BindDouble binds v to parameter i.
func (s *Stmt) BindDouble(i int, v float64) error {
	if err := s.usable(); err != nil {
		return err
	}
	return s.check(sqlite3.Xsqlite3_bind_double(s.c.tls, s.p, int32(i), v))
}

// BindNull binds NULL to parameter i.
func (s *Stmt) BindNull(i int) error {
	if err := s.usable(); err != nil {
		return err
	}
	return s.check(sqlite3.Xsqlite3_bind_null(s.c.tls, s.p, int32(i)))
}

// BindText binds v to parameter i as TEXT ("" stays an empty string, not
// NULL). SQLite copies the value, so nothing outlives the call.
func (s *Stmt) BindText(i int, v string) error {
	if err := s.usable(); err != nil {
		return err
	}
	if len(v) >= math.MaxInt32 {
		return &Error{Code: ResultTooBig, Msg: "string or blob too big"}
	}
	// Never a NULL pointer, even for "": that would bind NULL.
	n := len(v) + 1
	z := s.c.tls.Alloc(n)
	defer s.c.tls.Free(n)
	copy(cmem(z, len(v)), v)
	return s.check(sqlite3.Xsqlite3_bind_text(s.c.tls, s.p, int32(i), z, int32(len(v)), sqlite3.SQLITE_TRANSIENT))
}

// BindBlob binds a copy of v to parameter i as a BLOB (nil binds an empty
// BLOB, not NULL).
func (s *Stmt) BindBlob(i int, v []byte) error {
	if err := s.usable(); err != nil {
		return err
	}
	n := len(v) + 1
	z := s.c.tls.Alloc(n)
	defer s.c.tls.Free(n)
	copy(cmem(z, len(v)), v)
	return s.check(sqlite3.Xsqlite3_bind_blob64(s.c.tls, s.p, int32(i), z, uint64(len(v)), sqlite3.SQLITE_TRANSIENT))
}
