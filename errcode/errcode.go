// Package errcode holds the error codes an agent reads at the start of
// every error text (SPEC 3) and the error that carries one. It is a leaf:
// policy, ipc, worker and server all return its errors, and a code
// survives the trip from a worker to the front unchanged.
//
// errors.Is compares codes, so a caller asks what kind of failure it has
// without matching text:
//
//	if errors.Is(err, errcode.Timeout) { ... }
//
// An error of another package carries a code with an ErrorCode method and
// compares with [Code.Is]: ipc.RunError says why a worker gave no answer
// and leaves its wording to the server, yet errors.Is and [Of] read its
// code as they read an Error's.
//
// Imports: nothing. It is under 150 lines on purpose: every side of the
// process boundary (policy, search, ipc, worker, server, ui) returns its
// errors, so folding it into any of them would make all the others import
// that package; as a leaf it costs the worker nothing.
package errcode

import "errors"

// Code is one of the codes of SPEC 3. As an error it matches every Error
// that carries it (errors.Is).
type Code string

// The codes, as an agent reads them.
const (
	SQL                 Code = "SQL_ERROR"
	ReadOnly            Code = "READ_ONLY_VIOLATION"
	Policy              Code = "POLICY_VIOLATION"
	Protected           Code = "PROTECTED_TABLE"
	MultipleStatements  Code = "MULTIPLE_STATEMENTS"
	TableNotFound       Code = "TABLE_NOT_FOUND"
	InvalidArgument     Code = "INVALID_ARGUMENT"
	Timeout             Code = "TIMEOUT"
	ResourceLimit       Code = "RESOURCE_LIMIT"
	DatabaseUnavailable Code = "DATABASE_UNAVAILABLE"
	WorkerFailed        Code = "WORKER_FAILED"
	// Declined: the person asked through elicitation did not allow the
	// statement (SPEC 5.5); nothing was changed.
	Declined Code = "DECLINED"
	// Cancelled appears in audit rows only: a call cancelled by the client
	// (notifications/cancelled) or stopped by shutdown gets no response at
	// all (MCP).
	Cancelled Code = "CANCELLED"
	// Forbidden: the agent's token lacks the scope a tool needs (SPEC
	// 11.2); over OAuth the HTTP answer is 403 insufficient_scope.
	Forbidden Code = "FORBIDDEN"
)

func (c Code) Error() string { return string(c) }

// Is reports whether target is c, or an error that carries c.
func (c Code) Is(target error) bool {
	switch t := target.(type) {
	case Code:
		return c == t
	case coded:
		return c == t.ErrorCode()
	}
	return false
}

// coded is an error that carries a code: an *Error, or another package's
// error that keeps its code apart from any message (ipc.RunError).
type coded interface {
	error
	ErrorCode() Code
}

// Error is a failure with a code; Message says what happened and how to
// fix the call. Messages are written for agents, so they are composed
// where the failure is known.
type Error struct {
	Code    Code
	Message string
}

// New returns an Error with code and message.
func New(code Code, message string) *Error { return &Error{Code: code, Message: message} }

// Error is "CODE: message", the text the agent reads.
func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// ErrorCode is e's code ("" for a nil *Error).
func (e *Error) ErrorCode() Code {
	if e == nil {
		return ""
	}
	return e.Code
}

// Is reports whether target is e's code, or an error with the same code.
func (e *Error) Is(target error) bool { return e.Code.Is(target) }

// Of returns the code of err, or WorkerFailed for an error that carries
// none (a bug or an I/O failure, never shown with a stack trace).
func Of(err error) Code {
	var c coded
	if errors.As(err, &c) {
		return c.ErrorCode()
	}
	return WorkerFailed
}
