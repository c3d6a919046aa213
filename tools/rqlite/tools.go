//go:build tools

// Package rqlitetool pins rqlite v8.43.4, the engine of cluster mode
// (SPEC 13), for scripts/rqlite.sh to build: `go install` refuses it
// (its go.mod has replace lines, repeated in ours) and it needs cgo.
// The project's own module does not depend on it.
package rqlitetool

import _ "github.com/rqlite/rqlite/v8/cmd/rqlited"
