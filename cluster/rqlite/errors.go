package rqlite

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
)

// The failures a caller tells apart with errors.Is. Both carry
// DATABASE_UNAVAILABLE for errcode.Of; the front words what the agent reads.
var (
	// ErrUnavailable: no node served the call (none reachable, no leader,
	// the time ran out). Nothing was applied; the call may be retried.
	ErrUnavailable error = &sentinel{"rqlite: the cluster did not serve the request"}
	// ErrUnknownOutcome: a write was sent and no answer came (a timeout,
	// a lost connection, a leader lost while committing). It may or may
	// not have taken effect: check before sending it again.
	ErrUnknownOutcome error = &sentinel{"rqlite: the write was sent to the cluster and no answer came"}
)

// sentinel is a documented failure that carries DATABASE_UNAVAILABLE.
type sentinel struct{ msg string }

func (s *sentinel) Error() string { return s.msg }

func (s *sentinel) ErrorCode() errcode.Code { return errcode.DatabaseUnavailable }

// UnavailableError is an ErrUnavailable with what each node said.
type UnavailableError struct {
	// Reason sums the failure up: "no node reachable", "no leader ...".
	Reason string
	// Attempts has one "URL: what happened" per node tried, the last
	// attempt of each.
	Attempts []string
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("rqlite: cluster unavailable: %s (%s)", e.Reason, strings.Join(e.Attempts, "; "))
}

// Is makes errors.Is(err, ErrUnavailable) and errors.Is(err,
// errcode.DatabaseUnavailable) true.
func (e *UnavailableError) Is(target error) bool {
	return target == ErrUnavailable || target == error(errcode.DatabaseUnavailable)
}

// ErrorCode is DATABASE_UNAVAILABLE.
func (e *UnavailableError) ErrorCode() errcode.Code { return errcode.DatabaseUnavailable }

// unknownOutcome is an ErrUnknownOutcome naming the node and what broke.
type unknownOutcome struct {
	node string
	err  error
}

func (e *unknownOutcome) Error() string {
	return fmt.Sprintf("rqlite: outcome unknown: the write was sent to %s and then %v; it may or may not have taken effect: check whether it did before sending it again", e.node, e.err)
}

func (e *unknownOutcome) Is(target error) bool {
	return target == ErrUnknownOutcome || target == error(errcode.DatabaseUnavailable)
}

func (e *unknownOutcome) ErrorCode() errcode.Code { return errcode.DatabaseUnavailable }

func (e *unknownOutcome) Unwrap() error { return e.err }

// StatementError is one statement that SQLite refused in a request.
// In an Execute the whole request was rolled back on every node: no
// statement of it took effect.
type StatementError struct {
	// Index is the statement's position in the request, from 0.
	Index int
	// Message is SQLite's (through rqlite's) error text.
	Message string
	// write: the statement was part of an Execute.
	write bool
}

// executeTimeout is how rqlite words a statement stopped at the
// request's db_timeout (Options.DBTimeout).
const executeTimeout = "execute timeout"

// TimedOut says whether the statement was stopped at Options.DBTimeout
// (on every node alike: the bound travels in the Raft entry).
func (e *StatementError) TimedOut() bool { return e.Message == executeTimeout }

func (e *StatementError) Error() string {
	if e.write {
		return fmt.Sprintf("rqlite: statement %d failed: %s; the request was rolled back as a whole, no statement of it took effect", e.Index, e.Message)
	}
	return fmt.Sprintf("rqlite: statement %d failed: %s", e.Index, e.Message)
}

// ErrorCode is SQL_ERROR.
func (e *StatementError) ErrorCode() errcode.Code { return errcode.SQL }

// Is makes errors.Is(err, errcode.SQL) true.
func (e *StatementError) Is(target error) bool { return target == error(errcode.SQL) }

// ArgumentError is an argument the client cannot send as it is.
type ArgumentError struct {
	Statement, Arg int // from 0
	Reason         string
}

func (e *ArgumentError) Error() string {
	return fmt.Sprintf("rqlite: statement %d, argument %d: %s", e.Statement, e.Arg, e.Reason)
}

// ErrorCode is INVALID_ARGUMENT.
func (e *ArgumentError) ErrorCode() errcode.Code { return errcode.InvalidArgument }

var errNoStatements = errors.New("rqlite: no statements: pass at least one")
