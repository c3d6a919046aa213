package ipc

import "errors"

// Error codes an agent sees at the start of every error text (SPEC 3).
const (
	CodeSQL                 = "SQL_ERROR"
	CodeReadOnly            = "READ_ONLY_VIOLATION"
	CodePolicy              = "POLICY_VIOLATION"
	CodeProtected           = "PROTECTED_TABLE"
	CodeMultipleStatements  = "MULTIPLE_STATEMENTS"
	CodeTableNotFound       = "TABLE_NOT_FOUND"
	CodeInvalidArgument     = "INVALID_ARGUMENT"
	CodeTimeout             = "TIMEOUT"
	CodeResourceLimit       = "RESOURCE_LIMIT"
	CodeDatabaseUnavailable = "DATABASE_UNAVAILABLE"
	CodeWorkerFailed        = "WORKER_FAILED"
	// CodeDeclined: the person asked through elicitation did not allow
	// the statement (SPEC 5.5); nothing was changed.
	CodeDeclined = "DECLINED"
	// CodeCancelled appears in audit rows only: a call cancelled by the
	// client (notifications/cancelled) or stopped by shutdown gets no
	// response at all (MCP).
	CodeCancelled = "CANCELLED"
)

// Error is a failure with a stable code; it survives the trip through a
// [Response] and back.
type Error struct {
	Code    string
	Message string
}

// Errorf-style constructor kept tiny on purpose: messages are written for
// agents, so they are composed at the call site.
func NewError(code, message string) *Error { return &Error{Code: code, Message: message} }

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Code returns the code of err, or WORKER_FAILED for an error that carries
// none (a bug or an I/O failure, never shown with a stack trace).
func Code(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeWorkerFailed
}
