package rawsqlite

import (
	"errors"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// Error is a failure reported by SQLite.
type Error struct {
	// Code is the extended result code, e.g. 2067 for
	// SQLITE_CONSTRAINT_UNIQUE; see Primary.
	Code int
	// Msg is SQLite's own message (sqlite3_errmsg), e.g.
	// "no such table: nope", or sqlite3_errstr of Code when the connection
	// has no message for it.
	Msg string
	// SysErrno is the OS error number behind an I/O error
	// (sqlite3_system_errno: EFBIG for a write past RLIMIT_FSIZE), else 0.
	SysErrno int
}

// Error returns Msg unchanged, so callers can show it to the agent as is.
func (e *Error) Error() string { return e.Msg }

// Primary returns the primary result code (Code & 0xff), the value the
// Result* constants name.
func (e *Error) Primary() int { return e.Code & 0xff }

// ErrorCode returns the extended result code of err if it is or wraps an
// *Error, else 0.
func ErrorCode(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

// errorFor builds the error for result code rc of the latest call on c.
// errmsg is used only when the connection's recorded error matches rc:
// otherwise it describes some earlier failure.
func (c *Conn) errorFor(rc int32) error {
	if c.db == 0 {
		return errorFromCode(rc)
	}
	ext := sqlite3.Xsqlite3_extended_errcode(c.tls, c.db)
	if ext&0xff != rc&0xff {
		return errorFromCode(rc)
	}
	code := rc
	if rc&^0xff == 0 {
		// Some calls return the primary code while the handle holds the
		// extended one.
		code = ext
	}
	e := &Error{Code: int(code), Msg: libc.GoString(sqlite3.Xsqlite3_errmsg(c.tls, c.db))}
	if e.Primary() == ResultIOErr {
		e.SysErrno = int(sqlite3.Xsqlite3_system_errno(c.tls, c.db))
	}
	return e
}

// errorFromCode builds an error from a result code alone.
func errorFromCode(rc int32) error {
	msg := withTLS(func(tls *libc.TLS) string {
		return libc.GoString(sqlite3.Xsqlite3_errstr(tls, rc))
	})
	return &Error{Code: int(rc), Msg: msg}
}
