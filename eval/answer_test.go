package eval

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	rowsTask := func(order string, tol float64) Task {
		return Task{ID: "t", Answer: AnswerSchema{Type: TypeRows, Columns: []string{"name", "total"}}, Order: order, Tolerance: tol}
	}
	listTask := func(order string) Task {
		return Task{ID: "t", Answer: AnswerSchema{Type: TypeList}, Order: order}
	}
	scalarTask := func(tol float64) Task {
		return Task{ID: "t", Answer: AnswerSchema{Type: TypeScalar}, Tolerance: tol}
	}
	refusal := Task{ID: "t", Answer: AnswerSchema{Type: TypeRefusal}}
	rows := func(r ...[]any) Answer { return Answer{Type: TypeRows, Rows: r} }
	list := func(v ...any) Answer { return Answer{Type: TypeList, Items: v} }
	scalar := func(v any) Answer { return Answer{Type: TypeScalar, Value: v} }
	want := rows([]any{"a", 1.5}, []any{"b", int64(2)})

	tests := []struct {
		name    string
		task    Task
		got     Answer
		want    Answer
		wantErr string // "" = must pass
	}{
		{"rows equal", rowsTask(OrderExact, 0), rows([]any{"a", 1.5}, []any{"b", int64(2)}), want, ""},
		{"rows within tolerance", rowsTask(OrderExact, 0.01), rows([]any{"a", 1.505}, []any{"b", 2.0}), want, ""},
		{"rows outside tolerance", rowsTask(OrderExact, 0.01), rows([]any{"a", 1.52}, []any{"b", 2.0}), want, "row 1"},
		{"int and float of the same number", rowsTask(OrderExact, 0), rows([]any{"a", 1.5}, []any{"b", 2.0}), want, ""},
		{"number as text", rowsTask(OrderExact, 0), rows([]any{"a", "1.5"}, []any{"b", " 2 "}), want, ""},
		{"text trimmed", rowsTask(OrderExact, 0), rows([]any{" a ", 1.5}, []any{"b", int64(2)}), want, ""},
		{"text is case-sensitive", rowsTask(OrderExact, 0), rows([]any{"A", 1.5}, []any{"b", int64(2)}), want, "row 1"},
		{"wrong order, exact", rowsTask(OrderExact, 0), rows([]any{"b", int64(2)}, []any{"a", 1.5}), want, "row 1"},
		{"wrong order, any", rowsTask(OrderAny, 0), rows([]any{"b", int64(2)}, []any{"a", 1.5}), want, ""},
		{"missing row", rowsTask(OrderAny, 0), rows([]any{"a", 1.5}), want, "1 rows, want 2; missing row"},
		{"extra row", rowsTask(OrderExact, 0), rows([]any{"a", 1.5}, []any{"b", int64(2)}, []any{"c", int64(3)}), want, "3 rows, want 2; unexpected row"},
		{"duplicate instead of distinct, any", rowsTask(OrderAny, 0), rows([]any{"a", 1.5}, []any{"a", 1.5}), want, "missing row"},
		{"short row", rowsTask(OrderExact, 0), rows([]any{"a"}, []any{"b", int64(2)}), want, "row 1 has 1 values, want 2"},
		{"null equals null", rowsTask(OrderExact, 0), rows([]any{nil, 1.5}), rows([]any{nil, 1.5}), ""},
		{"null is not empty text", rowsTask(OrderExact, 0), rows([]any{"", 1.5}), rows([]any{nil, 1.5}), "row 1"},
		{"null is not zero", rowsTask(OrderExact, 0), rows([]any{"a", int64(0)}), rows([]any{"a", nil}), "row 1"},
		{"type mismatch", rowsTask(OrderExact, 0), scalar(1), want, `answer type "scalar"`},
		{"list any order", listTask(OrderAny), list("x", "y", "z"), list("z", "x", "y"), ""},
		{"list exact order", listTask(OrderExact), list("x", "y"), list("y", "x"), "item 1"},
		{"list missing item", listTask(OrderAny), list("x"), list("x", "y"), `missing item "y"`},
		{"scalar equal", scalarTask(0), scalar(int64(12)), scalar(int64(12)), ""},
		{"scalar float vs int", scalarTask(0), scalar(12.0), scalar(int64(12)), ""},
		{"scalar off by one", scalarTask(0), scalar(int64(13)), scalar(int64(12)), "value 13, want 12"},
		{"scalar rounded to cents", scalarTask(0.01), scalar(1128621.73), scalar(1128621.7300000002), ""},
		{"scalar rounded wrongly", scalarTask(0.01), scalar(1128621.8), scalar(1128621.73), "tolerance 0.01"},
		{"summation noise without tolerance", scalarTask(0), scalar(20107.26), scalar(20107.260000000002), ""},
		{"scalar text", scalarTask(0), scalar("Berlin"), scalar("Berlin"), ""},
		{"scalar number with unit is wrong", scalarTask(0.01), scalar("$12.00"), scalar(12.0), "value"},
		{"refused", refusal, Answer{Type: TypeRefusal, Status: StatusRefused}, Answer{Type: TypeRefusal, Status: StatusRefused}, ""},
		{"done instead of refused", refusal, Answer{Type: TypeRefusal, Status: StatusDone}, Answer{Type: TypeRefusal, Status: StatusRefused}, `status "done"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(tt.task, tt.got, tt.want)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Check = %v, want nil", err)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("Check = nil, want an error mentioning %q", tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Fatalf("Check = %v, want it to mention %q", err, tt.wantErr)
			}
		})
	}
}

func TestParseSubmission(t *testing.T) {
	rowsSchema := AnswerSchema{Type: TypeRows, Columns: []string{"id", "name"}}
	tests := []struct {
		name    string
		schema  AnswerSchema
		input   string
		want    Answer
		wantErr string
	}{
		{"rows as objects", rowsSchema, `{"rows":[{"id":1,"name":"a"},{"name":"b","id":2.5}]}`,
			Answer{Type: TypeRows, Rows: [][]any{{int64(1), "a"}, {2.5, "b"}}}, ""},
		{"rows as arrays", rowsSchema, `{"rows":[[1,"a"]]}`, Answer{Type: TypeRows, Rows: [][]any{{int64(1), "a"}}}, ""},
		{"rows empty", rowsSchema, `{"rows":[]}`, Answer{Type: TypeRows, Rows: [][]any{}}, ""},
		{"rows missing key", rowsSchema, `{"rows":[{"id":1}]}`, Answer{}, `row 1: missing key "name"`},
		{"rows short array", rowsSchema, `{"rows":[[1]]}`, Answer{}, "1 values, want 2"},
		{"rows not array", rowsSchema, `{"rows":"1,a"}`, Answer{}, `"rows" must be an array`},
		{"row not object", rowsSchema, `{"rows":[5]}`, Answer{}, "must be an object"},
		{"scalar", AnswerSchema{Type: TypeScalar}, `{"value":12}`, Answer{Type: TypeScalar, Value: int64(12)}, ""},
		{"scalar null", AnswerSchema{Type: TypeScalar}, `{"value":null}`, Answer{Type: TypeScalar}, ""},
		{"scalar missing", AnswerSchema{Type: TypeScalar}, `{}`, Answer{}, `missing "value"`},
		{"scalar array", AnswerSchema{Type: TypeScalar}, `{"value":[1]}`, Answer{}, "not an array"},
		{"big integer stays exact", AnswerSchema{Type: TypeScalar}, `{"value":9007199254740993}`, Answer{Type: TypeScalar, Value: int64(9007199254740993)}, ""},
		{"list", AnswerSchema{Type: TypeList}, `{"items":["a","b"]}`, Answer{Type: TypeList, Items: []any{"a", "b"}}, ""},
		{"list missing", AnswerSchema{Type: TypeList}, `{"value":"a"}`, Answer{}, `"items" must be an array`},
		{"refusal", AnswerSchema{Type: TypeRefusal}, `{"status":"refused","message":"read-only"}`, Answer{Type: TypeRefusal, Status: StatusRefused, Message: "read-only"}, ""},
		{"refusal bad status", AnswerSchema{Type: TypeRefusal}, `{"status":"maybe"}`, Answer{}, `"status" must be`},
		{"not an object", AnswerSchema{Type: TypeScalar}, `[1]`, Answer{}, "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSubmission(tt.schema, json.RawMessage(tt.input))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want it to mention %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			gb, _ := json.Marshal(got)
			wb, _ := json.Marshal(tt.want)
			if string(gb) != string(wb) {
				t.Errorf("got %s, want %s", gb, wb)
			}
			if got.Value != tt.want.Value {
				t.Errorf("value %#v, want %#v", got.Value, tt.want.Value)
			}
		})
	}
}

func TestInputSchemaIsJSONSchemaObject(t *testing.T) {
	for _, s := range []AnswerSchema{
		{Type: TypeRows, Columns: []string{"a", "b"}}, {Type: TypeList}, {Type: TypeScalar}, {Type: TypeRefusal},
	} {
		t.Run(s.Type, func(t *testing.T) {
			b, err := json.Marshal(s.InputSchema())
			if err != nil {
				t.Fatal(err)
			}
			var v struct {
				Type       string         `json:"type"`
				Properties map[string]any `json:"properties"`
				Required   []string       `json:"required"`
			}
			if err := json.Unmarshal(b, &v); err != nil {
				t.Fatal(err)
			}
			if v.Type != "object" || len(v.Properties) == 0 || len(v.Required) == 0 {
				t.Errorf("schema %s", b)
			}
			if ins := s.Instructions(OrderAny); !strings.Contains(ins, SubmitToolName) {
				t.Errorf("instructions do not name %s: %s", SubmitToolName, ins)
			}
		})
	}
}

func TestParseToolError(t *testing.T) {
	tests := []struct {
		text, code, msg string
	}{
		{`{"error":{"code":"READ_ONLY_VIOLATION","message":"DELETE is not allowed"}}`, "READ_ONLY_VIOLATION", "DELETE is not allowed"},
		{"TABLE_NOT_FOUND: Table \"foo\" does not exist.", "TABLE_NOT_FOUND", "Table \"foo\" does not exist."},
		{"something broke: badly", "", "something broke: badly"},
		{`{"columns":[]}`, "", `{"columns":[]}`},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			e := ParseToolError(tt.text)
			if e.Code != tt.code || e.Message != tt.msg {
				t.Errorf("got %q / %q, want %q / %q", e.Code, e.Message, tt.code, tt.msg)
			}
		})
	}
}
