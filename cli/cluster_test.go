package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/cluster/rqlite"
)

// fakeQueries answers rqlite's /db/query with the rows of the first
// statement's SQL that contains a key of answers.
func fakeQueries(t *testing.T, answers map[string][][]any) *rqlite.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var stmts []any
		if err := json.NewDecoder(r.Body).Decode(&stmts); err != nil || len(stmts) != 1 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		sql, _ := stmts[0].(string)
		if l, ok := stmts[0].([]any); ok {
			sql, _ = l[0].(string)
		}
		for key, rows := range answers {
			if strings.Contains(sql, key) {
				cols := make([]string, 0)
				types := make([]string, 0)
				if len(rows) > 0 {
					for i := range rows[0] {
						cols = append(cols, "c"+string(rune('0'+i)))
						types = append(types, "")
					}
				} else {
					cols, types = []string{"c0", "c1"}, []string{"text", "text"}
				}
				json.NewEncoder(w).Encode(map[string]any{"results": []any{map[string]any{"columns": cols, "types": types, "values": rows}}})
				return
			}
		}
		t.Errorf("unexpected query %q", sql)
		http.Error(w, "unexpected", http.StatusBadRequest)
	}))
	t.Cleanup(srv.Close)
	c, err := rqlite.New([]string{srv.URL}, rqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestClusterNotEmpty(t *testing.T) {
	memoryTables := [][]any{{"table", "memory_events"}, {"table", "memory_checkpoints"}, {"table", "query_log"}, {"view", "query_errors"}, {"table", "memory_events_fts"}, {"table", "memory_events_fts_data"}, {"table", "memory_cluster_guard"}}
	zero := [][]any{{0}}
	tests := []struct {
		name    string
		answers map[string][][]any
		want    string
	}{
		{"new cluster", map[string][][]any{"sqlite_schema": nil}, ""},
		{"a front started", map[string][][]any{"sqlite_schema": memoryTables, "memory_events": zero, "memory_checkpoints": zero, "query_log": zero}, ""},
		{"an agent table", map[string][][]any{"sqlite_schema": append(memoryTables[:1:1], []any{"table", "notes"}, []any{"view", "recent"})}, "the agent's objects (table notes, view recent)"},
		{"events", map[string][][]any{"sqlite_schema": memoryTables, "memory_events": {{3}}, "memory_checkpoints": zero, "query_log": {{12}}}, "it holds 3 rows in memory_events, 12 rows in query_log"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := clusterNotEmpty(context.Background(), fakeQueries(t, tt.answers))
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Fatalf("clusterNotEmpty = %q, want %q", got, tt.want)
			}
		})
	}
}
