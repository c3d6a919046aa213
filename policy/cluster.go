package policy

import (
	"fmt"
	"strings"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

// Functions whose value can differ between the nodes of a cluster.
//
// In cluster mode (SPEC 13) every node runs the text of a write itself, so
// a write must compute the same values on every node. The check reads the
// compiled program (EXPLAIN), not the text: it sees what will run,
// including the functions of a column DEFAULT the INSERT leaves out, of
// the triggers the statement fires and of the views it reads, which no
// scan of the text finds, and it is not fooled by comments, quoting or a
// column named like a function. A date/time function is allowed only when
// every argument is a constant the program loads (String8, Integer, Int64,
// Real, Null) and none of them makes it read the node's clock ('now', or
// no time value) or time zone ('localtime', 'utc'); an argument computed
// while the statement runs (a column, a parameter, 'n'||'ow') could be
// 'now', so it is refused too.

// divergentAlways are refused in a cluster's writes whatever their
// arguments, with why.
var divergentAlways = map[string]string{
	"random":            "each node would draw its own random number",
	"randomblob":        "each node would draw its own random bytes",
	"current_date":      "each node reads its own clock",
	"current_time":      "each node reads its own clock",
	"current_timestamp": "each node reads its own clock",
	// They answer for the node's connection, whose history a node
	// restored from a snapshot does not share.
	"changes":           "it counts the node connection's previous statement, which differs on a node restored from a snapshot",
	"total_changes":     "it counts the node connection's history, which differs between nodes",
	"last_insert_rowid": "it reads the node connection's history, which differs between nodes",
	// The nodes' builds may differ during an upgrade; the offset of a
	// row differs between files with the same rows.
	"sqlite_version":            "the nodes' SQLite versions may differ",
	"sqlite_source_id":          "the nodes' SQLite builds may differ",
	"sqlite_compileoption_get":  "the nodes' SQLite builds may differ",
	"sqlite_compileoption_used": "the nodes' SQLite builds may differ",
	"sqlite_offset":             "a row's place in the file differs between nodes",
}

// timeValueArgs are the date/time functions and which of their arguments
// are time values ('now' when missing); the arguments after the last of
// them are modifiers.
var timeValueArgs = map[string][]int{
	"date":      {0},
	"time":      {0},
	"datetime":  {0},
	"julianday": {0},
	"unixepoch": {0},
	"strftime":  {1},
	"timediff":  {0, 1},
}

// zoneModifiers make a date/time function read the node's time zone.
var zoneModifiers = map[string]bool{"localtime": true, "utc": true}

// Divergent is a call in a write whose value can differ between nodes.
type Divergent struct {
	// Function is the function as SQLite names it (lower case):
	// "random", "datetime", "current_timestamp".
	Function string
	// Trigger names the trigger whose body calls it; "" for the
	// statement's own program (which includes the column defaults of an
	// INSERT and the views it reads).
	Trigger string
	// Why says what makes the value differ.
	Why string
	// Clock is true for a call that reads the clock or the time zone:
	// the fix is a time written as a literal.
	Clock bool
}

// DivergentCall returns the first call in program (as EXPLAIN lists it,
// trigger programs included) whose value can differ between the nodes of
// a cluster, or nil.
func DivergentCall(program []Op) *Divergent {
	for _, seg := range splitPrograms(program) {
		for _, op := range seg {
			if op.Opcode != "Function" && op.Opcode != "PureFunc" {
				continue
			}
			name := functionName(op.P4)
			if why, bad := divergentAlways[name]; bad {
				return &Divergent{Function: name, Trigger: triggerOf(seg), Why: why, Clock: strings.HasPrefix(name, "current_")}
			}
			// PureFunc is a call in a CHECK constraint, an index
			// expression or a generated column, where SQLite itself fails
			// a date/time function that reads the clock or time zone
			// (sqlite3NotPureFunc): the same on every node.
			if times, ok := timeValueArgs[name]; ok && op.Opcode == "Function" {
				if why := clockUse(seg, op, times); why != "" {
					return &Divergent{Function: name, Trigger: triggerOf(seg), Why: why, Clock: true}
				}
			}
		}
	}
	return nil
}

// functionName is the function of a Function instruction's P4, which
// EXPLAIN shows as "name(nArg)".
func functionName(p4 string) string {
	if i := strings.LastIndexByte(p4, '('); i >= 0 {
		p4 = p4[:i]
	}
	return rawsqlite.FoldName(p4)
}

// clockUse says why the date/time call op reads the node's clock or time
// zone, or "" when it does not. A Function instruction passes its
// arguments in registers P2 on (P2 is 0 without arguments), and P1 has bit
// i set when argument i is a constant; the number of arguments is not
// shown. SQLite gives the arguments of a call with a constant argument
// registers of their own, allocated before the arguments are coded, so a
// write of the register past the constants before the call is a computed
// argument (code after the call may use that register for anything).
func clockUse(seg []Op, op Op, times []int) string {
	n := 0
	for n < 32 && op.P1&(1<<n) != 0 {
		n++
	}
	computed := "an argument computed while the statement runs, which could be 'now' (the node's clock)"
	switch {
	case op.P2 == 0:
		n = 0
	case n == 0 || op.P1>>n != 0 || mayWriteBefore(seg, op.P2+int64(n), op.Addr):
		return computed
	}
	values := make([]string, n)
	for i := range values {
		v, ok := constantArg(seg, op.P2+int64(i))
		if !ok {
			return computed
		}
		values[i] = v
	}
	last := -1
	for _, i := range times {
		if i >= n {
			return "without a time value it reads the node's clock ('now')"
		}
		if strings.EqualFold(strings.TrimSpace(values[i]), "now") {
			return "'now' reads the node's clock"
		}
		last = max(last, i)
	}
	for _, v := range values[last+1:] {
		if m := rawsqlite.FoldName(strings.TrimSpace(v)); zoneModifiers[m] {
			return fmt.Sprintf("the modifier '%s' reads the node's time zone", m)
		}
	}
	return ""
}

// mayWriteBefore reports whether an instruction of seg before address
// addr may write register reg; an instruction this check does not know
// counts when any operand names the register.
func mayWriteBefore(seg []Op, reg, addr int64) bool {
	for _, op := range seg {
		if op.Addr >= addr {
			break
		}
		w, ok := registerWrites(op)
		if !ok {
			if op.P1 == reg || op.P2 == reg || op.P3 == reg {
				return true
			}
			continue
		}
		for _, r := range w {
			if r.lo <= reg && reg <= r.hi {
				return true
			}
		}
	}
	return false
}

// constantArg is the value every write of register reg in seg loads: a
// string constant, a number or NULL ("" for those two, which are never a
// clock word). ok is false when a write computes the value.
func constantArg(seg []Op, reg int64) (value string, ok bool) {
	found := false
	for _, op := range seg {
		switch op.Opcode {
		case "Integer", "Int64", "Real":
			if op.P2 == reg {
				found = true
			}
			continue
		}
		w, known := registerWrites(op)
		if !known {
			if op.P1 == reg || op.P2 == reg || op.P3 == reg {
				return "", false
			}
			continue
		}
		for _, r := range w {
			if reg < r.lo || reg > r.hi {
				continue
			}
			switch r.kind {
			case writesNull:
			case writesConstant:
				if found && op.P4 != value {
					return "", false
				}
				value = op.P4
			default:
				return "", false
			}
			found = true
		}
	}
	return value, found
}
