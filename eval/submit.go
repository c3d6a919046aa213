package eval

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// SubmitToolName is the tool a model calls to give its final answer.
const SubmitToolName = "submit_answer"

// anyValue is the JSON schema of one answer value.
var anyValue = map[string]any{"type": []string{"string", "number", "integer", "boolean", "null"}}

// InputSchema returns the JSON schema of submit_answer's input for s: rows
// as objects keyed by column name (models fill named fields more reliably
// than positional arrays), a list as "items", a scalar as "value", a refusal
// as "status".
func (s AnswerSchema) InputSchema() map[string]any {
	obj := func(props map[string]any, required ...string) map[string]any {
		return map[string]any{"type": "object", "properties": props, "required": required}
	}
	switch s.Type {
	case TypeRows:
		cols := map[string]any{}
		for _, c := range s.Columns {
			cols[c] = anyValue
		}
		row := obj(cols, s.Columns...)
		return obj(map[string]any{"rows": map[string]any{
			"type": "array", "items": row,
			"description": "One object per result row, with exactly the keys " + strings.Join(s.Columns, ", ") + ".",
		}}, "rows")
	case TypeList:
		return obj(map[string]any{"items": map[string]any{"type": "array", "items": anyValue}}, "items")
	case TypeRefusal:
		return obj(map[string]any{
			"status": map[string]any{
				"type": "string", "enum": []string{StatusDone, StatusRefused},
				"description": `"done" if the request was carried out, "refused" if it could not be`,
			},
			"message": map[string]any{"type": "string", "description": "what happened, in one sentence"},
		}, "status")
	default:
		return obj(map[string]any{"value": anyValue}, "value")
	}
}

// Instructions tells a model how to submit an answer of shape s.
func (s AnswerSchema) Instructions(order string) string {
	var b strings.Builder
	b.WriteString("When you have the answer, call " + SubmitToolName + " once with it: ")
	switch s.Type {
	case TypeRows:
		fmt.Fprintf(&b, `{"rows": [{%s}, ...]}, one object per row with exactly these keys.`, keysExample(s.Columns))
	case TypeList:
		b.WriteString(`{"items": [...]}.`)
	case TypeRefusal:
		b.WriteString(`{"status": "done" or "refused", "message": "..."}.`)
	default:
		b.WriteString(`{"value": ...} with a single value.`)
	}
	switch {
	case s.Type != TypeRows && s.Type != TypeList:
	case order == OrderExact:
		b.WriteString(" Give them in the order the question asks for.")
	default:
		b.WriteString(" Their order does not matter.")
	}
	if s.Type != TypeRefusal {
		b.WriteString(" Numbers are plain JSON numbers (no currency signs or thousands separators); amounts may be rounded to cents.")
	}
	return b.String()
}

func keysExample(cols []string) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = fmt.Sprintf("%q: ...", c)
	}
	return strings.Join(parts, ", ")
}

// ParseSubmission turns a submit_answer input into an Answer of shape s. Its
// errors are worded for the model, which gets them back as a tool error.
func ParseSubmission(s AnswerSchema, input json.RawMessage) (Answer, error) {
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.UseNumber()
	var in map[string]any
	if err := dec.Decode(&in); err != nil {
		return Answer{}, fmt.Errorf("input is not a JSON object: %v", err)
	}
	a := Answer{Type: s.Type}
	switch s.Type {
	case TypeScalar:
		v, ok := in["value"]
		if !ok {
			return a, errors.New(`missing "value"`)
		}
		if _, isObj := v.(map[string]any); isObj {
			return a, errors.New(`"value" must be a single value, not an object`)
		}
		if _, isArr := v.([]any); isArr {
			return a, errors.New(`"value" must be a single value, not an array`)
		}
		a.Value = normalize(v)
	case TypeList:
		items, ok := in["items"].([]any)
		if !ok {
			return a, errors.New(`"items" must be an array`)
		}
		a.Items = make([]any, len(items))
		for i, v := range items {
			a.Items[i] = normalize(v)
		}
	case TypeRows:
		rows, ok := in["rows"].([]any)
		if !ok {
			return a, errors.New(`"rows" must be an array`)
		}
		a.Rows = make([][]any, 0, len(rows))
		for i, r := range rows {
			row, err := submittedRow(s.Columns, r)
			if err != nil {
				return a, fmt.Errorf("row %d: %v", i+1, err)
			}
			a.Rows = append(a.Rows, row)
		}
	case TypeRefusal:
		st, _ := in["status"].(string)
		if st != StatusDone && st != StatusRefused {
			return a, fmt.Errorf(`"status" must be %q or %q`, StatusDone, StatusRefused)
		}
		a.Status = st
		a.Message, _ = in["message"].(string)
	default:
		return a, fmt.Errorf("unknown answer type %q", s.Type)
	}
	return a, nil
}

// submittedRow accepts an object keyed by column name or, leniently, an array
// in column order.
func submittedRow(cols []string, r any) ([]any, error) {
	switch x := r.(type) {
	case map[string]any:
		row := make([]any, len(cols))
		for i, c := range cols {
			v, ok := x[c]
			if !ok {
				return nil, fmt.Errorf("missing key %q (keys are %s)", c, strings.Join(cols, ", "))
			}
			row[i] = normalize(v)
		}
		return row, nil
	case []any:
		if len(x) != len(cols) {
			return nil, fmt.Errorf("%d values, want %d (%s)", len(x), len(cols), strings.Join(cols, ", "))
		}
		row := make([]any, len(x))
		for i, v := range x {
			row[i] = normalize(v)
		}
		return row, nil
	}
	return nil, fmt.Errorf("must be an object with keys %s", strings.Join(cols, ", "))
}
