package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ToolCaller calls one tool of the MCP server. A failed tool call (a
// refusal, bad SQL) is text with isError set and a nil err; err is for
// transport failures only.
type ToolCaller interface {
	CallTool(ctx context.Context, name string, args map[string]any) (text string, isError bool, err error)
}

// ToolCallerFunc adapts a function to ToolCaller.
type ToolCallerFunc func(ctx context.Context, name string, args map[string]any) (string, bool, error)

// CallTool calls f.
func (f ToolCallerFunc) CallTool(ctx context.Context, name string, args map[string]any) (string, bool, error) {
	return f(ctx, name, args)
}

// ToolError is a tool error of the read-only profile,
// {"error":{"code","message"}}.
type ToolError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *ToolError) Error() string { return e.Code + ": " + e.Message }

// ParseToolError reads a tool error text: the read-only profile's JSON form,
// or the default profile's "CODE: message". The code is empty if neither fits.
func ParseToolError(text string) *ToolError {
	var v struct {
		Error *ToolError `json:"error"`
	}
	if err := json.Unmarshal([]byte(text), &v); err == nil && v.Error != nil {
		return v.Error
	}
	code, msg, ok := strings.Cut(text, ": ")
	if ok && code != "" && strings.Trim(code, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_") == "" {
		return &ToolError{Code: code, Message: msg}
	}
	return &ToolError{Message: text}
}

// maxPages bounds how far the scripted solver follows hasMore.
const maxPages = 1000

// SolveScripted replays t.Script through caller and builds the answer from
// the results the script's Extract entries name. A call with ExpectError must
// fail with that code; for a refusal task the answer is then StatusRefused,
// and StatusDone (with an error) if the server carried the request out.
func SolveScripted(ctx context.Context, caller ToolCaller, t Task) (Answer, error) {
	var rows [][]any
	refused := ""
	for i, c := range t.Script {
		step := fmt.Sprintf("eval: %s: script call %d (%s)", t.ID, i+1, c.Tool)
		args := maps.Clone(c.Args)
		if args == nil {
			args = map[string]any{}
		}
		if c.ExpectError != "" {
			text, isErr, err := caller.CallTool(ctx, c.Tool, args)
			if err != nil {
				return Answer{}, fmt.Errorf("%s: %w", step, err)
			}
			if !isErr {
				a := Answer{Type: t.Answer.Type, Status: StatusDone}
				return a, fmt.Errorf("%s: succeeded, want a %s error", step, c.ExpectError)
			}
			te := ParseToolError(text)
			if te.Code != c.ExpectError {
				return Answer{}, fmt.Errorf("%s: error %q, want code %s", step, clip(text, 200), c.ExpectError)
			}
			refused = te.Message
			continue
		}
		for page := 0; ; page++ {
			text, isErr, err := caller.CallTool(ctx, c.Tool, args)
			if err != nil {
				return Answer{}, fmt.Errorf("%s: %w", step, err)
			}
			if isErr {
				return Answer{}, fmt.Errorf("%s: tool error: %s", step, clip(text, 300))
			}
			if c.Extract == nil {
				break
			}
			got, next, err := extract(text, c.Extract)
			if err != nil {
				return Answer{}, fmt.Errorf("%s: %w", step, err)
			}
			rows = append(rows, got...)
			if next < 0 {
				break
			}
			if page+1 >= maxPages {
				return Answer{}, fmt.Errorf("%s: more than %d pages", step, maxPages)
			}
			args["offset"] = next
		}
	}
	if t.Answer.Type == TypeRefusal {
		return Answer{Type: TypeRefusal, Status: StatusRefused, Message: refused}, nil
	}
	a, err := buildAnswer(t.Answer, rows)
	if err != nil {
		return Answer{}, fmt.Errorf("eval: %s: %w", t.ID, err)
	}
	return a, nil
}

// extract takes answer rows from one JSON tool result. next is the offset of
// the next page of a query_database result with hasMore, or -1.
func extract(text string, x *Extract) (rows [][]any, next int, err error) {
	dec := json.NewDecoder(bytes.NewReader([]byte(text)))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, -1, fmt.Errorf("result is not a JSON object: %w (%s)", err, clip(text, 200))
	}
	if x.From == "rows" {
		return extractRows(obj, x)
	}
	list, ok := obj[x.From].([]any)
	if !ok {
		return nil, -1, fmt.Errorf("result has no array %q", x.From)
	}
	for _, e := range list {
		item, ok := e.(map[string]any)
		if !ok {
			return nil, -1, fmt.Errorf("%q holds a non-object: %v", x.From, e)
		}
		if !matches(item, x.Where) {
			continue
		}
		row := make([]any, len(x.Fields))
		for i, f := range x.Fields {
			v, ok := item[f]
			if !ok {
				v, ok = obj[f]
			}
			if !ok {
				return nil, -1, fmt.Errorf("%q item has no field %q", x.From, f)
			}
			row[i] = normalize(v)
		}
		rows = append(rows, row)
	}
	return rows, -1, nil
}

func matches(item map[string]any, where map[string]any) bool {
	for k, want := range where {
		if !equalValue(normalize(item[k]), want, 0) {
			return false
		}
	}
	return true
}

func extractRows(obj map[string]any, x *Extract) ([][]any, int, error) {
	var res struct {
		Columns      []string `json:"columns"`
		Rows         [][]any  `json:"rows"`
		ReturnedRows int      `json:"returnedRows"`
		Offset       int      `json:"offset"`
		HasMore      bool     `json:"hasMore"`
	}
	// Re-encoding is cheap next to a tool call and keeps json.Number values.
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, -1, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&res); err != nil {
		return nil, -1, fmt.Errorf("not a query_database result: %w", err)
	}
	if res.Columns == nil || res.Rows == nil {
		return nil, -1, errors.New("not a query_database result: no columns or rows")
	}
	idx := make([]int, 0, len(x.Fields))
	for _, f := range x.Fields {
		i := slices.Index(res.Columns, f)
		if i < 0 {
			return nil, -1, fmt.Errorf("result has no column %q (columns %v)", f, res.Columns)
		}
		idx = append(idx, i)
	}
	out := make([][]any, 0, len(res.Rows))
	for _, r := range res.Rows {
		if len(r) != len(res.Columns) {
			return nil, -1, fmt.Errorf("row of %d values for %d columns", len(r), len(res.Columns))
		}
		row := r
		if len(idx) > 0 {
			row = make([]any, len(idx))
			for j, i := range idx {
				row[j] = r[i]
			}
		}
		for j := range row {
			row[j] = normalize(row[j])
		}
		out = append(out, row)
	}
	next := -1
	if res.HasMore {
		if res.ReturnedRows <= 0 {
			return nil, -1, errors.New("hasMore with no rows returned")
		}
		next = res.Offset + res.ReturnedRows
	}
	return out, next, nil
}

var (
	_ ToolCaller = ToolCallerFunc(nil)
	_ ToolCaller = (*recorder)(nil)
)
