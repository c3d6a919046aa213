package policy

import (
	"strings"
	"testing"
)

// TestDivergentCall reads programs as EXPLAIN lists them (shapes taken
// from modernc's SQLite 3.50): constant arguments are loaded in Once
// blocks or the init section, computed ones just before the call.
func TestDivergentCall(t *testing.T) {
	once := func(ops ...Op) []Op {
		return append([]Op{{Addr: 0, Opcode: "Init", P2: 20}, {Addr: 1, Opcode: "Once", P2: 9}}, ops...)
	}
	tests := []struct {
		name    string
		program []Op
		want    string // the function refused, "" for none
		why     string
	}{
		{"date literal", once(Op{Addr: 2, Opcode: "String8", P2: 8, P4: "2026-01-01"}, Op{Addr: 3, Opcode: "Function", P1: 1, P2: 8, P3: 7, P4: "date(-1)"}), "", ""},
		{"date now", once(Op{Addr: 2, Opcode: "String8", P2: 8, P4: "now"}, Op{Addr: 3, Opcode: "Function", P1: 1, P2: 8, P3: 7, P4: "date(-1)"}), "date", "'now'"},
		{"date Now padded", once(Op{Addr: 2, Opcode: "String8", P2: 8, P4: " Now "}, Op{Addr: 3, Opcode: "Function", P1: 1, P2: 8, P3: 7, P4: "date(-1)"}), "date", "'now'"},
		{"no arguments", once(Op{Addr: 2, Opcode: "Function", P3: 7, P4: "datetime(-1)"}), "datetime", "without a time value"},
		{"strftime format only", once(Op{Addr: 2, Opcode: "String8", P2: 8, P4: "%Y"}, Op{Addr: 3, Opcode: "Function", P1: 1, P2: 8, P3: 7, P4: "strftime(-1)"}), "strftime", "without a time value"},
		{"strftime literal, then a call writing the next register", once(
			Op{Addr: 2, Opcode: "String8", P2: 8, P4: "%Y"}, Op{Addr: 3, Opcode: "String8", P2: 9, P4: "2026-01-01"},
			Op{Addr: 4, Opcode: "Function", P1: 3, P2: 8, P3: 7, P4: "strftime(-1)"},
			Op{Addr: 5, Opcode: "Real", P2: 11, P4: "2460000.5"}, Op{Addr: 6, Opcode: "Function", P1: 1, P2: 11, P3: 10, P4: "julianday(-1)"}), "", ""},
		{"computed modifier before the call", once(
			Op{Addr: 2, Opcode: "String8", P2: 8, P4: "2026-01-01"}, Op{Addr: 3, Opcode: "Column", P2: 1, P3: 9},
			Op{Addr: 4, Opcode: "Function", P1: 1, P2: 8, P3: 7, P4: "date(-1)"}), "date", "computed"},
		{"computed time value", once(Op{Addr: 2, Opcode: "Column", P2: 1, P3: 8}, Op{Addr: 3, Opcode: "Function", P2: 8, P3: 7, P4: "date(-1)"}), "date", "computed"},
		{"number time value", once(Op{Addr: 2, Opcode: "Integer", P1: 1700000000, P2: 8}, Op{Addr: 3, Opcode: "String8", P2: 9, P4: "unixepoch"},
			Op{Addr: 4, Opcode: "Function", P1: 3, P2: 8, P3: 7, P4: "datetime(-1)"}), "", ""},
		{"localtime", once(Op{Addr: 2, Opcode: "String8", P2: 8, P4: "2026-01-01"}, Op{Addr: 3, Opcode: "String8", P2: 9, P4: "LocalTime"},
			Op{Addr: 4, Opcode: "Function", P1: 3, P2: 8, P3: 7, P4: "date(-1)"}), "date", "'localtime'"},
		{"concatenated", once(Op{Addr: 2, Opcode: "String8", P2: 9, P4: "n"}, Op{Addr: 3, Opcode: "String8", P2: 10, P4: "ow"},
			Op{Addr: 4, Opcode: "Concat", P1: 10, P2: 9, P3: 8}, Op{Addr: 5, Opcode: "Function", P1: 1, P2: 8, P3: 7, P4: "date(-1)"}), "date", "computed"},
		{"timediff second value now", once(Op{Addr: 2, Opcode: "String8", P2: 8, P4: "2026-01-01"}, Op{Addr: 3, Opcode: "String8", P2: 9, P4: "now"},
			Op{Addr: 4, Opcode: "Function", P1: 3, P2: 8, P3: 7, P4: "timediff(-1)"}), "timediff", "'now'"},
		{"random", once(Op{Addr: 2, Opcode: "Function", P3: 5, P4: "random(0)"}), "random", "random number"},
		{"current_timestamp", once(Op{Addr: 2, Opcode: "Function", P3: 4, P4: "current_timestamp(0)"}), "current_timestamp", "clock"},
		{"pure date of a column", once(Op{Addr: 2, Opcode: "Column", P2: 1, P3: 8}, Op{Addr: 3, Opcode: "PureFunc", P2: 8, P3: 7, P4: "date(-1)"}), "", ""},
		{"abs and lower are fine", once(Op{Addr: 2, Opcode: "Function", P2: 8, P3: 7, P4: "abs(1)"}, Op{Addr: 3, Opcode: "Function", P2: 8, P3: 7, P4: "lower(1)"}), "", ""},
		{"in a trigger", append(once(Op{Addr: 2, Opcode: "Program", P3: 4, P4: "program"}),
			Op{Addr: 0, Opcode: "Init", P2: 1, P4: "-- TRIGGER stamp"}, Op{Addr: 1, Opcode: "String8", P2: 7, P4: "now"},
			Op{Addr: 2, Opcode: "Function", P1: 1, P2: 7, P3: 3, P4: "datetime(-1)"}), "datetime", "'now'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := DivergentCall(tt.program)
			if tt.want == "" {
				if d != nil {
					t.Fatalf("refused %+v", *d)
				}
				return
			}
			if d == nil || d.Function != tt.want || !strings.Contains(d.Why, tt.why) {
				t.Fatalf("got %+v, want %s because %q", d, tt.want, tt.why)
			}
			if strings.Contains(tt.name, "trigger") && d.Trigger != "stamp" {
				t.Fatalf("trigger %q, want stamp", d.Trigger)
			}
		})
	}
}
