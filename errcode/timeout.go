package errcode

import (
	"fmt"
	"time"
)

// Duration writes a budget as the flags take it: whole seconds as "3s",
// anything else in Go's form ("300ms", "1.5s").
func Duration(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", int64(d/time.Second))
	}
	return d.String()
}

// QueryTimeout is the TIMEOUT of a statement stopped when its budget
// (--query-timeout) ran out; how says how it was stopped ("interrupted"
// by the worker itself, "worker killed" by the front).
func QueryTimeout(budget time.Duration, how string) *Error {
	return New(Timeout, fmt.Sprintf("query stopped after %s (%s); narrow the query, add a LIMIT, or raise --query-timeout", Duration(budget), how))
}

// SnapshotTimeout is the TIMEOUT of a destructive statement's snapshot that
// was not complete within its budget (--snapshot-timeout): stopped by the
// worker itself, or killed by the front (a copy stuck on the disk).
func SnapshotTimeout(budget time.Duration, killed bool) *Error {
	how, hint := "", ""
	if killed {
		how, hint = " (worker killed)", ", or free disk bandwidth"
	}
	return New(Timeout, fmt.Sprintf("the snapshot was not complete after %s%s; nothing was changed and no partial snapshot is kept. Raise --snapshot-timeout%s", Duration(budget), how, hint))
}
