package policy

import (
	"strings"
	"testing"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
)

// TestCheckFTSCommands covers the program check on listings shaped like
// SQLite's (the harness and TestPolicy run it on real ones).
func TestCheckFTSCommands(t *testing.T) {
	f := FTSTable{Name: "f", Vtab: "vtab:1", Command: 1, Columns: 3}
	other := "vtab:2" // an R*Tree table
	prog := func(ops ...Op) []Op {
		for i := range ops {
			if ops[i].Addr == 0 && i > 0 {
				ops[i].Addr = int64(i) // keep one program unless a test starts another
			}
		}
		return ops
	}
	// INSERT INTO f(f) VALUES(<command in r4>): VUpdate P2=5 args from r1.
	vupdate := Op{Opcode: "VUpdate", P1: 1, P2: 5, P3: 1, P4: "vtab:1"}
	cases := []struct {
		name string
		mode Mode
		ops  []Op
		want string // "" allowed, else a substring of the message
	}{
		{"command column NULL", Write, prog(Op{Opcode: "Init", P2: 3}, Op{Opcode: "Null", P2: 1, P3: 5}, vupdate, Op{Opcode: "Halt"}), ""},
		{"maintenance command", Write, prog(Op{Opcode: "Init"}, Op{Opcode: "String8", P2: 4, P4: "Optimize"}, Op{Opcode: "Null", P2: 1, P3: 3}, vupdate), ""},
		{"delete-all", Write, prog(Op{Opcode: "Init"}, Op{Opcode: "String8", P2: 4, P4: "delete-all"}, vupdate), "removes indexed data"},
		{"destructive mode allows it", Destructive, prog(Op{Opcode: "Init"}, Op{Opcode: "String8", P2: 4, P4: "delete-all"}, vupdate), ""},
		{"null range covering the command", Write, prog(Op{Opcode: "Init"}, Op{Opcode: "Null", P2: 2, P3: 6}, vupdate), ""},
		{"copied in", Write, prog(Op{Opcode: "Init"}, Op{Opcode: "String8", P2: 9, P4: "optimize"}, Op{Opcode: "Copy", P1: 9, P2: 3, P3: 2}, vupdate), "computed while it runs"},
		{"function result", Write, prog(Op{Opcode: "Init"}, Op{Opcode: "Function", P2: 7, P3: 4}, vupdate), "computed while it runs"},
		{"unknown instruction", Write, prog(Op{Opcode: "Init"}, Op{Opcode: "SomethingNew", P1: 50, P2: 60, P3: 70}, vupdate), "computed while it runs"},
		{"argument count mismatch", Write, prog(Op{Opcode: "Init"}, Op{Opcode: "VUpdate", P1: 1, P2: 4, P3: 1, P4: "vtab:1"}), "computed while it runs"},
		{"a delete has one argument", Write, prog(Op{Opcode: "Init"}, Op{Opcode: "Rowid", P2: 1}, Op{Opcode: "VUpdate", P2: 1, P3: 1, P4: "vtab:1"}), ""},
		{"another virtual table", Write, prog(Op{Opcode: "Init"}, Op{Opcode: "String8", P2: 4, P4: "delete-all"}, Op{Opcode: "VUpdate", P2: 5, P3: 1, P4: other}), ""},
		{"jump addresses are not registers", Write, prog(Op{Opcode: "Init", P2: 4}, Op{Opcode: "Goto", P2: 4}, Op{Opcode: "Null", P2: 1, P3: 5}, vupdate), ""},
		{"a trigger program's AUTOINCREMENT upkeep writes the root program", Write,
			[]Op{{Addr: 0, Opcode: "Init"}, {Addr: 1, Opcode: "Null", P2: 1, P3: 5}, {Addr: 2, Opcode: "VUpdate", P1: 1, P2: 5, P3: 1, P4: "vtab:1"},
				{Addr: 0, Opcode: "Init"}, {Addr: 1, Opcode: "NewRowid", P1: 0, P2: 2, P3: 4}}, "computed while it runs"},
		{"registers of a trigger program are its own", Write,
			[]Op{{Addr: 0, Opcode: "Init"}, {Addr: 1, Opcode: "Null", P2: 1, P3: 5}, {Addr: 2, Opcode: "Program", P3: 9},
				{Addr: 3, Opcode: "VUpdate", P1: 1, P2: 5, P3: 1, P4: "vtab:1"},
				{Addr: 0, Opcode: "Init"}, {Addr: 1, Opcode: "Function", P3: 4}}, ""},
		{"a trigger's command names the trigger", Write,
			[]Op{{Addr: 0, Opcode: "Init"}, {Addr: 1, Opcode: "Program", P3: 9},
				{Addr: 0, Opcode: "Init", P4: "-- TRIGGER notes_au"}, {Addr: 1, Opcode: "String8", P2: 4, P4: "delete"}, {Addr: 2, Opcode: "VUpdate", P1: 1, P2: 5, P3: 1, P4: "vtab:1"}},
			"VALUES('delete') (in trigger notes_au, which this statement fires) is not allowed"},
		{"a trigger's computed command names the trigger", Write,
			[]Op{{Addr: 0, Opcode: "Init"}, {Addr: 1, Opcode: "Program", P3: 9},
				{Addr: 0, Opcode: "Init", P4: "-- TRIGGER t_ai"}, {Addr: 1, Opcode: "Function", P3: 4}, {Addr: 2, Opcode: "VUpdate", P1: 1, P2: 5, P3: 1, P4: "vtab:1"}},
			"(in trigger t_ai, which this statement fires) sets the FTS command column"},
		{"read mode leaves it to the INSERT refusal", Read, prog(Op{Opcode: "Init"}, Op{Opcode: "String8", P2: 4, P4: "delete-all"}, vupdate), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := CheckFTSCommands(c.mode, c.ops, []FTSTable{f})
			switch {
			case c.want == "" && v != nil:
				t.Fatalf("refused: %v", v)
			case c.want != "" && (v == nil || v.Code != errcode.ReadOnly || !strings.Contains(v.Message, c.want) || !strings.Contains(v.Message, "destructive_query")):
				t.Fatalf("got %v, want READ_ONLY_VIOLATION containing %q", v, c.want)
			}
		})
	}
}
