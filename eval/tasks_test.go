package eval

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/eval/sampledb"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/eval/evaltest"
)

func loadTasks(t *testing.T) []Task {
	t.Helper()
	tasks, err := LoadTasks()
	if err != nil {
		t.Fatal(err)
	}
	return tasks
}

func taskByID(t *testing.T, id string) Task {
	t.Helper()
	for _, task := range loadTasks(t) {
		if task.ID == id {
			return task
		}
	}
	t.Fatalf("no task %q", id)
	return Task{}
}

func TestLoadTasks(t *testing.T) {
	tasks := loadTasks(t)
	types := map[string]int{}
	for _, task := range tasks {
		types[task.Answer.Type]++
		if task.Answer.Type != TypeRefusal && strings.Contains(task.Question, "SELECT") {
			t.Errorf("%s: the question gives SQL away", task.ID)
		}
	}
	for _, typ := range []string{TypeScalar, TypeList, TypeRows, TypeRefusal} {
		if types[typ] == 0 {
			t.Errorf("no task of type %s", typ)
		}
	}
	if len(tasks) < 12 {
		t.Errorf("%d tasks, want at least 12", len(tasks))
	}
}

func TestParseTasksInvalid(t *testing.T) {
	const okScript = `"script":[{"tool":"query_database","args":{"sql":"SELECT 1"},"extract":{"from":"rows"}}]`
	tests := []struct {
		name, json, wantErr string
	}{
		{"not json", `{`, "tasks"},
		{"unknown field", `[{"id":"a","question":"q","answer":{"type":"scalar"},"reference_sql":"SELECT 1","bogus":1,` + okScript + `}]`, "unknown field"},
		{"empty id", `[{"question":"q","answer":{"type":"scalar"},"reference_sql":"SELECT 1",` + okScript + `}]`, "empty id"},
		{"duplicate id", `[{"id":"a","question":"q","answer":{"type":"scalar"},"reference_sql":"SELECT 1",` + okScript + `},{"id":"a","question":"q","answer":{"type":"scalar"},"reference_sql":"SELECT 1",` + okScript + `}]`, "duplicate"},
		{"unknown type", `[{"id":"a","question":"q","answer":{"type":"table"},"reference_sql":"SELECT 1",` + okScript + `}]`, "unknown answer type"},
		{"rows without columns", `[{"id":"a","question":"q","answer":{"type":"rows"},"order":"any","reference_sql":"SELECT 1",` + okScript + `}]`, "without columns"},
		{"list without order", `[{"id":"a","question":"q","answer":{"type":"list"},"reference_sql":"SELECT 1",` + okScript + `}]`, "order"},
		{"missing reference", `[{"id":"a","question":"q","answer":{"type":"scalar"},` + okScript + `}]`, "reference_sql"},
		{"no extract", `[{"id":"a","question":"q","answer":{"type":"scalar"},"reference_sql":"SELECT 1","script":[{"tool":"list_tables"}]}]`, "extracts no answer"},
		{"refusal without expect", `[{"id":"a","question":"q","answer":{"type":"refusal"},` + okScript + `}]`, "expect_error"},
		{"negative tolerance", `[{"id":"a","question":"q","answer":{"type":"scalar"},"reference_sql":"SELECT 1","tolerance":-1,` + okScript + `}]`, "tolerance"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseTasks([]byte(tt.json))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("ParseTasks error = %v, want it to mention %q", err, tt.wantErr)
			}
		})
	}
}

func TestReferenceAllTasks(t *testing.T) {
	for _, task := range loadTasks(t) {
		t.Run(task.ID, func(t *testing.T) {
			a, err := Reference(context.Background(), shopPath, task)
			if err != nil {
				t.Fatal(err)
			}
			if a.Type != task.Answer.Type {
				t.Fatalf("type %q, want %q", a.Type, task.Answer.Type)
			}
			switch a.Type {
			case TypeScalar:
				if v, ok := number(a.Value); !ok || v <= 0 {
					t.Errorf("scalar %v, want a positive number", a.Value)
				}
			case TypeList:
				if len(a.Items) == 0 {
					t.Error("empty list")
				}
			case TypeRows:
				if len(a.Rows) == 0 {
					t.Error("no rows")
				}
				for i, r := range a.Rows {
					if slices.Contains(r, nil) {
						t.Errorf("row %d has a NULL: %v", i+1, r)
					}
				}
			case TypeRefusal:
				if a.Status != StatusRefused {
					t.Errorf("status %q", a.Status)
				}
			}
			// The answer must agree with itself under Check.
			if err := Check(task, a, a); err != nil {
				t.Errorf("Check(ref, ref) = %v", err)
			}
		})
	}
}

// TestReferenceSanity pins a few answers to facts about the sample data.
func TestReferenceSanity(t *testing.T) {
	ref := func(id string) Answer {
		a, err := Reference(context.Background(), shopPath, taskByID(t, id))
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	t.Run("tables", func(t *testing.T) {
		got := ref("discover_tables").Items
		want := sampledb.Tables()
		if len(got) != len(want) {
			t.Fatalf("tables %v, want %v", got, want)
		}
		for _, w := range want {
			if !slices.Contains(got, any(w)) {
				t.Errorf("missing table %s in %v", w, got)
			}
		}
	})
	t.Run("orders by status add up", func(t *testing.T) {
		sum := int64(0)
		for _, r := range ref("aggregate_orders_by_status").Rows {
			sum += r[1].(int64)
		}
		if sum != sampledb.Orders {
			t.Errorf("status counts add up to %d, want %d", sum, sampledb.Orders)
		}
	})
	t.Run("2025 revenue below total", func(t *testing.T) {
		total := 0.0
		for _, r := range ref("revenue_per_category").Rows {
			total += r[1].(float64)
		}
		y2025 := ref("revenue_2025").Value.(float64)
		if y2025 <= 0 || y2025 >= total {
			t.Errorf("2025 revenue %v, total %v", y2025, total)
		}
	})
	t.Run("join path", func(t *testing.T) {
		want := [][]any{{"order_items", "order_id", "orders", "id"}, {"orders", "customer_id", "customers", "id"}}
		task := taskByID(t, "discover_join_path")
		if err := Check(task, ref(task.ID), Answer{Type: TypeRows, Rows: want}); err != nil {
			t.Error(err)
		}
	})
	t.Run("sizes", func(t *testing.T) {
		sizes := map[string]int{
			"spend_per_customer": 10, "orders_per_customer": 5, "sales_per_product": 10,
			"revenue_per_category": 8, "sort_most_expensive_products": 5, "join_latest_orders": 10,
			"aggregate_orders_by_status": len(sampledb.Statuses),
		}
		for id, n := range sizes {
			if got := len(ref(id).Rows); got != n {
				t.Errorf("%s: %d rows, want %d", id, got, n)
			}
		}
	})
}

func TestReferenceMissingFile(t *testing.T) {
	task := taskByID(t, "revenue_2025")
	if _, err := Reference(context.Background(), t.TempDir()+"/nope.db", task); err == nil {
		t.Fatal("Reference on a missing file succeeded")
	}
}

// TestScriptedAllTasks replays every script against the fake server: the
// scripts and extraction rules must reproduce every reference answer.
func TestScriptedAllTasks(t *testing.T) {
	for _, task := range loadTasks(t) {
		t.Run(task.ID, func(t *testing.T) {
			fs := evaltest.NewServer(t, shopPath)
			want, err := Reference(context.Background(), shopPath, task)
			if err != nil {
				t.Fatal(err)
			}
			got, err := SolveScripted(context.Background(), fs, task)
			if err != nil {
				t.Fatalf("SolveScripted: %v (calls %v)", err, fs.CallLog())
			}
			if err := Check(task, got, want); err != nil {
				t.Errorf("Check: %v", err)
			}
			if task.ID == "revenue_per_category" {
				// limit 3 over 8 categories: three pages.
				if n := len(fs.CallLog()); n != 4 {
					t.Errorf("%d calls, want describe + 3 pages: %v", n, fs.CallLog())
				}
			}
		})
	}
}

func TestScriptedFailures(t *testing.T) {
	refusal := taskByID(t, "refuse_delete_cancelled")
	scalar := taskByID(t, "revenue_2025")
	errTransport := errors.New("pipe closed")
	tests := []struct {
		name       string
		task       Task
		reply      func(name string) (string, bool, error)
		wantErr    string
		wantStatus string
	}{
		{"write not refused", refusal, func(string) (string, bool, error) { return `{"columns":[],"rows":[]}`, false, nil }, "succeeded", StatusDone},
		{"wrong code", refusal, func(string) (string, bool, error) { return evaltest.ToolError("SQL_ERROR", "near DELETE") }, "want code READ_ONLY_VIOLATION", ""},
		{"default profile text refusal", refusal, func(string) (string, bool, error) {
			return "READ_ONLY_VIOLATION: DELETE is not allowed", true, nil
		}, "", StatusRefused},
		{"tool error", scalar, func(string) (string, bool, error) { return evaltest.ToolError("SQL_ERROR", "no such table: orders") }, "no such table", ""},
		{"transport error", scalar, func(string) (string, bool, error) { return "", false, errTransport }, "pipe closed", ""},
		{"not json", scalar, func(string) (string, bool, error) { return "id,name\n1,x", false, nil }, "not a JSON object", ""},
		{"not a query result", scalar, func(name string) (string, bool, error) { return `{"tables":[]}`, false, nil }, "not a query_database result", ""},
		{"two rows for a scalar", scalar, func(name string) (string, bool, error) {
			return `{"columns":["x"],"rows":[[1],[2]],"returnedRows":2,"limit":100,"offset":0,"hasMore":false}`, false, nil
		}, "want 1", ""},
		{"hasMore without rows", scalar, func(name string) (string, bool, error) {
			return `{"columns":["x"],"rows":[],"returnedRows":0,"limit":100,"offset":0,"hasMore":true}`, false, nil
		}, "hasMore", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			caller := ToolCallerFunc(func(_ context.Context, name string, _ map[string]any) (string, bool, error) {
				return tt.reply(name)
			})
			a, err := SolveScripted(context.Background(), caller, tt.task)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("SolveScripted: %v", err)
				}
			} else if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("SolveScripted error = %v, want it to mention %q", err, tt.wantErr)
			}
			if a.Status != tt.wantStatus {
				t.Errorf("status %q, want %q", a.Status, tt.wantStatus)
			}
		})
	}
	t.Run("transport error is wrapped", func(t *testing.T) {
		_, err := SolveScripted(context.Background(), ToolCallerFunc(func(context.Context, string, map[string]any) (string, bool, error) {
			return "", false, errTransport
		}), scalar)
		if !errors.Is(err, errTransport) {
			t.Errorf("error %v does not wrap the transport error", err)
		}
	})
}
