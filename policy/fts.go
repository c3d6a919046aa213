package policy

import (
	"fmt"
	"sort"
	"strings"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

// FTS special commands.
//
// FTS5 (and FTS3/4, which modernc's SQLite does not compile in) takes
// commands through INSERTs into a hidden column named like the table:
// INSERT INTO f(f) VALUES('optimize'). Some lose nothing (they merge,
// rebuild or check the index, or change one of the table's settings);
// 'delete-all' and 'delete' remove indexed data, so they belong to
// destructive_query. The authorizer reports such an INSERT exactly like any
// other (SQLITE_INSERT on f, no column), so the command is read from the
// compiled program instead: the argument of the table's VUpdate that feeds
// the command column must be NULL, or a string constant naming a command
// that loses nothing. A command computed while the statement runs (from a
// subquery, a function, a parameter, a trigger's NEW row, several VALUES
// rows) cannot be known before it runs and is refused in write_query.

// ftsMaintenance are the commands write_query may run: FTS5's index
// maintenance and settings. FTS5 matches command names without regard to
// ASCII case; anything else ('delete-all', 'delete', unknown names) needs
// destructive_query.
var ftsMaintenance = map[string]bool{
	"optimize":        true,
	"merge":           true,
	"rebuild":         true,
	"integrity-check": true,
	"flush":           true,
	"automerge":       true,
	"crisismerge":     true,
	"usermerge":       true,
	"deletemerge":     true,
	"pgsz":            true,
	"rank":            true,
	"secure-delete":   true,
	"insttoken":       true,
}

// FTSMaintenanceCommands lists the FTS commands write_query allows, sorted.
func FTSMaintenanceCommands() []string {
	out := make([]string, 0, len(ftsMaintenance))
	for c := range ftsMaintenance {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// Op is one instruction of a compiled program, as EXPLAIN lists it. The
// programs of trigger bodies follow the main program, each starting again
// at Addr 0, with registers of their own.
type Op struct {
	Addr       int64
	Opcode     string
	P1, P2, P3 int64
	P4         string
}

// FTSTable is a virtual table with an FTS command column: a hidden column
// named like the table.
type FTSTable struct {
	Name string
	// Vtab is the P4 that EXPLAIN shows for the table's VUpdate on this
	// connection ("vtab:..."), which tells its VUpdates from other tables'.
	Vtab string
	// Command is the position of the command column among all the table's
	// columns, hidden ones included (pragma table_xinfo's cid), and Columns
	// their number. A VUpdate passes the old and new rowid, then one
	// argument per column.
	Command, Columns int
}

// CheckFTSCommands checks the INSERTs that program makes into tables (a
// statement's FTS tables among its insert targets) for FTS commands that
// mode does not allow. Only write mode restricts them: read modes refuse
// the INSERT itself, destructive_query allows every command.
func CheckFTSCommands(mode Mode, program []Op, tables []FTSTable) *errcode.Error {
	if mode != Write || len(tables) == 0 {
		return nil
	}
	byVtab := make(map[string]FTSTable, len(tables))
	for _, t := range tables {
		byVtab[t.Vtab] = t
	}
	segments := splitPrograms(program)
	for i, seg := range segments {
		for _, op := range seg {
			t, ok := byVtab[op.P4]
			if op.Opcode != "VUpdate" || !ok || op.P2 == 1 {
				continue // not an FTS table, or a DELETE (one argument)
			}
			if op.P2 != int64(2+t.Columns) {
				return ftsComputed(t.Name, triggerOf(seg))
			}
			reg := op.P3 + 2 + int64(t.Command)
			var subprograms [][]Op
			if i == 0 {
				subprograms = segments[1:]
			}
			values, known := constantWrites(seg, subprograms, reg)
			if !known {
				return ftsComputed(t.Name, triggerOf(seg))
			}
			for _, v := range values {
				if ftsMaintenance[rawsqlite.FoldName(v)] {
					continue
				}
				why := "is an FTS command that removes indexed data"
				if f := rawsqlite.FoldName(v); f != "delete-all" && f != "delete" {
					why = "is not one of the FTS maintenance commands that lose nothing"
				}
				return &errcode.Error{Code: errcode.ReadOnly, Message: fmt.Sprintf(
					"INSERT INTO %s(%s) VALUES(%s)%s is not allowed in write_query: %s %s (write_query allows %s); %s",
					t.Name, t.Name, sqlQuote(v), firedBy(triggerOf(seg)), sqlQuote(v), why,
					strings.Join(FTSMaintenanceCommands(), ", "), useDestructive(triggerOf(seg)))}
			}
		}
	}
	return nil
}

func ftsComputed(table, trigger string) *errcode.Error {
	if trigger != "" {
		return &errcode.Error{Code: errcode.ReadOnly, Message: fmt.Sprintf(
			"INSERT INTO %s(%s) ...%s sets the FTS command column to a value computed while it runs, so write_query cannot tell whether the command removes data; %s",
			table, table, firedBy(trigger), useDestructive(trigger))}
	}
	return &errcode.Error{Code: errcode.ReadOnly, Message: fmt.Sprintf(
		"this INSERT sets the FTS command column of %s (INSERT INTO %s(%s) ...) to a value computed while it runs, so write_query cannot tell whether the command removes data; write the command as a string literal, one command per statement (maintenance commands: %s), or use destructive_query (it snapshots the database first)",
		table, table, table, strings.Join(FTSMaintenanceCommands(), ", "))}
}

// triggerOf names the trigger whose program seg is: SQLite's EXPLAIN
// starts a trigger program with an Init whose P4 is "-- TRIGGER name".
// It is "" for the statement's own program.
func triggerOf(seg []Op) string {
	if len(seg) > 0 && seg[0].Opcode == "Init" {
		if name, ok := strings.CutPrefix(seg[0].P4, "-- TRIGGER "); ok {
			return name
		}
	}
	return ""
}

// firedBy says where an FTS command comes from when the agent did not
// write it: an agent that ran an UPDATE must learn that a trigger (say, the
// update trigger that keeps an external-content index in step) sends it.
func firedBy(trigger string) string {
	if trigger == "" {
		return ""
	}
	return " (in trigger " + trigger + ", which this statement fires)"
}

func useDestructive(trigger string) string {
	if trigger == "" {
		return "use destructive_query (it snapshots the database first)"
	}
	return "run this statement with destructive_query (it snapshots the database first)"
}

func sqlQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// splitPrograms cuts an EXPLAIN listing into the main program and the
// programs of trigger bodies.
func splitPrograms(ops []Op) [][]Op {
	var out [][]Op
	start := 0
	for i := 1; i <= len(ops); i++ {
		if i == len(ops) || ops[i].Addr == 0 {
			out = append(out, ops[start:i])
			start = i
		}
	}
	return out
}

// constantWrites finds every instruction of seg that may write register
// reg. known is true when each of them writes NULL or a string constant;
// values are those constants. For the root program, subprograms are the
// trigger programs, whose NewRowid (P3) and MemMax (P1) write the root
// program's registers (AUTOINCREMENT upkeep).
func constantWrites(seg []Op, subprograms [][]Op, reg int64) (values []string, known bool) {
	for _, op := range seg {
		w, ok := registerWrites(op)
		if !ok {
			return nil, false // an instruction this check does not know
		}
		for _, r := range w {
			if reg < r.lo || reg > r.hi {
				continue
			}
			switch r.kind {
			case writesNull:
			case writesConstant:
				values = append(values, op.P4)
			default:
				return nil, false
			}
		}
	}
	for _, sub := range subprograms {
		for _, op := range sub {
			if (op.Opcode == "NewRowid" && op.P3 == reg) || (op.Opcode == "MemMax" && op.P1 == reg) {
				return nil, false
			}
		}
	}
	return values, true
}

type writeKind int

const (
	writesValue    writeKind = iota // some value only known when it runs
	writesNull                      // NULL
	writesConstant                  // the string in P4
)

// regRange is a run of registers lo..hi that an instruction writes.
type regRange struct {
	lo, hi int64
	kind   writeKind
}

// Instructions that write no register: control flow, cursors, b-tree and
// virtual-table calls, comparisons and jumps (their P2 is an address), and
// instructions that only read registers.
var writesNothing = map[string]bool{
	"Init": true, "Goto": true, "Halt": true, "HaltIfNull": true, "Noop": true, "Explain": true,
	"Trace": true, "Abortable": true, "ResetCount": true, "Expire": true, "CursorHint": true,
	"ReleaseReg": true, "Transaction": true, "TableLock": true, "AutoCommit": true,
	"VBegin": true, "VOpen": true, "VFilter": true, "VNext": true, "VUpdate": true,
	"OpenRead": true, "OpenWrite": true, "OpenEphemeral": true, "OpenAutoindex": true,
	"OpenDup": true, "OpenPseudo": true, "SorterOpen": true, "Close": true, "ResetSorter": true,
	"Rewind": true, "Next": true, "Prev": true, "Last": true, "Sort": true, "SorterSort": true,
	"SorterNext": true, "SorterInsert": true, "SorterCompare": true, "NullRow": true,
	"Insert": true, "IdxInsert": true, "Delete": true, "IdxDelete": true,
	"SeekGE": true, "SeekGT": true, "SeekLE": true, "SeekLT": true, "SeekRowid": true,
	"SeekEnd": true, "SeekScan": true, "SeekHit": true, "IfNoHope": true, "NotExists": true,
	"Found": true, "NotFound": true, "NoConflict": true, "IdxGE": true, "IdxGT": true,
	"IdxLE": true, "IdxLT": true, "DeferredSeek": true, "FinishSeek": true,
	"Eq": true, "Ne": true, "Lt": true, "Le": true, "Gt": true, "Ge": true, "ElseEq": true,
	"Jump": true, "If": true, "IfNot": true, "IsNull": true, "NotNull": true, "IsType": true,
	"Once": true, "IfEmpty": true, "IfSizeBetween": true, "ResultRow": true,
	"EndCoroutine": true, "Return": true, "Compare": true, "Permutation": true,
	"FkCounter": true, "FkIfZero": true, "RowSetAdd": true, "RowSetTest": true,
	"Filter": true, "FilterAdd": true, "ColumnsUsed": true,
}

// registerWrites returns the registers op may write; ok is false for an
// instruction this table does not describe.
func registerWrites(op Op) (w []regRange, ok bool) {
	one := func(r int64, k writeKind) []regRange { return []regRange{{r, r, k}} }
	switch op.Opcode {
	case "Null", "BeginSubrtn":
		hi := op.P2
		if op.Opcode == "Null" && op.P3 > op.P2 {
			hi = op.P3
		}
		return []regRange{{op.P2, hi, writesNull}}, true
	case "SoftNull":
		return one(op.P1, writesNull), true
	case "IfNullRow":
		return one(op.P3, writesNull), true
	case "String8", "String":
		return one(op.P2, writesConstant), true
	case "Copy":
		return []regRange{{op.P2, op.P2 + max(op.P3, 0), writesValue}}, true
	case "Move":
		return []regRange{{op.P2, op.P2 + max(op.P3, 1) - 1, writesValue}}, true
	case "Affinity", "TypeCheck":
		// Convert P2 registers from P1 on in place.
		return []regRange{{op.P1, op.P1 + max(op.P2, 1) - 1, writesValue}}, true
	case "Integer", "Int64", "Real", "Blob", "Variable", "Rowid", "Sequence", "RowData",
		"SorterData", "IdxRowid", "Count", "SCopy", "IntCopy", "Param", "Not", "BitNot",
		"IsTrue", "ZeroOrNull", "OffsetLimit", "VInitIn", "Pagecount", "MaxPgcnt",
		"ReadCookie", "GetSubtype", "SetSubtype":
		return one(op.P2, writesValue), true
	case "NewRowid":
		return []regRange{{op.P2, op.P2, writesValue}, {op.P3, op.P3, writesValue}}, true
	case "Column", "VColumn", "Function", "PureFunc", "Add", "Subtract", "Multiply", "Divide",
		"Remainder", "Concat", "BitAnd", "BitOr", "ShiftLeft", "ShiftRight", "And", "Or",
		"MakeRecord", "AggValue", "AggStep", "AggStep1", "AggInverse", "RowSetRead",
		"Program", "Offset":
		return one(op.P3, writesValue), true
	case "InitCoroutine", "Yield", "Gosub", "Cast", "AddImm", "MustBeInt", "RealAffinity",
		"IfPos", "IfNotZero", "DecrJumpZero", "AggFinal", "MemMax", "CollSeq",
		"ClrSubtype":
		return one(op.P1, writesValue), true
	}
	if writesNothing[op.Opcode] {
		return nil, true
	}
	return nil, false
}
