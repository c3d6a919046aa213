package ipc

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestDetailWire: a Detail crosses the pipe as the flat object of the
// audit row's keys, and the front reads back that object.
func TestDetailWire(t *testing.T) {
	tests := []struct {
		name string
		d    *Detail
		want string
	}{
		{"snapshots disabled", &Detail{Snapshot: &SnapshotDetail{}}, `{"snapshot":""}`},
		{"snapshot tool", &Detail{Snapshot: &SnapshotDetail{Path: "d/m.db", Foreign: []string{"x"}}}, `{"snapshot":"d/m.db","snapshot_foreign":["x"]}`},
		{"full copy", &Detail{Snapshot: &SnapshotDetail{Path: "p", Kind: SnapshotFull, Why: "w", Bytes: 4096}, CopiedAgain: true},
			`{"snapshot":"p","snapshot_bytes":4096,"snapshot_copied_again":true,"snapshot_kind":"full","snapshot_why":"w"}`},
		{"undo record with no rows", &Detail{Snapshot: &SnapshotDetail{Path: "p", Kind: SnapshotUndo, Why: "w", Bytes: 10}},
			`{"snapshot":"p","snapshot_bytes":10,"snapshot_kind":"undo","snapshot_rows":0,"snapshot_why":"w"}`},
		{"view replaced", &Detail{PreviousSQL: "CREATE VIEW v AS SELECT 1"}, `{"previous_sql":"CREATE VIEW v AS SELECT 1"}`},
		{"search", &Detail{SQL: "SELECT 1", Search: &Search{Pattern: "a", Table: "t"}, Scan: &SearchScan{Key: "rowid", CandidateRows: 2}},
			`{"scan":{"columns":null,"key":"rowid","candidate_rows":2,"matching_values":0,"matching_rows":0,"candidate_cap_hit":false},"search":{"pattern":"a","table":"t","context_chars":0,"limit":0,"candidate_cap":0},"sql":"SELECT 1"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.d)
			if err != nil || string(b) != tt.want {
				t.Fatalf("wire %s (%v), want %s", b, err, tt.want)
			}
			var back Detail
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			var want map[string]any
			_ = json.Unmarshal([]byte(tt.want), &want)
			if got := back.Fields(); !reflect.DeepEqual(got, want) {
				t.Fatalf("read back %v, want %v", got, want)
			}
		})
	}
	if (*Detail)(nil).Fields() != nil {
		t.Fatal("a nil Detail has fields")
	}
}
