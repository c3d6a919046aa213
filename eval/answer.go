package eval

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Answer types.
const (
	TypeScalar  = "scalar"  // one value
	TypeList    = "list"    // values; order by the task's rule
	TypeRows    = "rows"    // rows with the schema's columns
	TypeRefusal = "refusal" // whether a request was carried out
)

// Statuses of a refusal-type answer.
const (
	StatusRefused = "refused"
	StatusDone    = "done"
)

// AnswerSchema is the fixed shape of a task's answer.
type AnswerSchema struct {
	Type    string   `json:"type"`
	Columns []string `json:"columns,omitempty"` // TypeRows only
}

// Answer is an answer in the shape of an AnswerSchema; only the field of its
// type is set. Values are nil, int64, float64, string or bool.
type Answer struct {
	Type    string  `json:"type"`
	Value   any     `json:"value,omitempty"`
	Items   []any   `json:"items,omitempty"`
	Rows    [][]any `json:"rows,omitempty"`
	Status  string  `json:"status,omitempty"`
	Message string  `json:"message,omitempty"`
}

// String renders the answer compactly for reports, cut to about 300 bytes.
func (a Answer) String() string {
	var v any
	switch a.Type {
	case TypeScalar:
		v = a.Value
	case TypeList:
		v = a.Items
	case TypeRows:
		v = a.Rows
	case TypeRefusal:
		v = a.Status
	default:
		return "(no answer)"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return clip(string(b), 300)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("...[+%d bytes]", len(s)-n)
}

// Order rules of a task.
const (
	OrderExact = "exact" // rows or items must come in the reference order
	OrderAny   = "any"   // compared as multisets
)

// Check compares got with want by t's answer schema, ordering rule and
// tolerance. Numbers compare within t.Tolerance (a number given as a string,
// such as "42", counts as that number); other values compare as text with
// surrounding white space ignored.
func Check(t Task, got, want Answer) error {
	if got.Type != t.Answer.Type {
		return fmt.Errorf("answer type %q, want %q", got.Type, t.Answer.Type)
	}
	tol := t.Tolerance
	switch t.Answer.Type {
	case TypeScalar:
		if !equalValue(got.Value, want.Value, tol) {
			return fmt.Errorf("value %s, want %s%s", show(got.Value), show(want.Value), tolNote(tol))
		}
		return nil
	case TypeList:
		wrap := func(vs []any) [][]any {
			rows := make([][]any, len(vs))
			for i, v := range vs {
				rows[i] = []any{v}
			}
			return rows
		}
		return checkRows(wrap(got.Items), wrap(want.Items), t.Order, tol, "item")
	case TypeRows:
		for i, r := range got.Rows {
			if len(r) != len(t.Answer.Columns) {
				return fmt.Errorf("row %d has %d values, want %d (%s)", i+1, len(r), len(t.Answer.Columns), strings.Join(t.Answer.Columns, ", "))
			}
		}
		return checkRows(got.Rows, want.Rows, t.Order, tol, "row")
	case TypeRefusal:
		if got.Status != want.Status {
			return fmt.Errorf("status %q, want %q", got.Status, want.Status)
		}
		return nil
	}
	return fmt.Errorf("unknown answer type %q", t.Answer.Type)
}

func checkRows(got, want [][]any, order string, tol float64, what string) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d %ss, want %d%s", len(got), what, len(want), firstMissing(got, want, tol, what))
	}
	if order == OrderExact {
		for i := range want {
			if !equalRow(got[i], want[i], tol) {
				return fmt.Errorf("%s %d is %s, want %s%s", what, i+1, showRow(got[i]), showRow(want[i]), tolNote(tol))
			}
		}
		return nil
	}
	if msg := firstMissing(got, want, tol, what); msg != "" {
		return errors.New(strings.TrimPrefix(msg, "; "))
	}
	return nil
}

// firstMissing matches got against want greedily (each got row used once) and
// describes the first wanted row left unmatched, or returns "".
func firstMissing(got, want [][]any, tol float64, what string) string {
	used := make([]bool, len(got))
	for _, w := range want {
		found := false
		for j, g := range got {
			if !used[j] && equalRow(g, w, tol) {
				used[j], found = true, true
				break
			}
		}
		if !found {
			return fmt.Sprintf("; missing %s %s%s", what, showRow(w), tolNote(tol))
		}
	}
	for j, g := range got {
		if !used[j] {
			return fmt.Sprintf("; unexpected %s %s", what, showRow(g))
		}
	}
	return ""
}

func equalRow(got, want []any, tol float64) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range want {
		if !equalValue(got[i], want[i], tol) {
			return false
		}
	}
	return true
}

func equalValue(got, want any, tol float64) bool {
	if got == nil || want == nil {
		return got == nil && want == nil
	}
	gf, gok := number(got)
	wf, wok := number(want)
	if gok && wok {
		// The small relative slack absorbs float summation order only.
		return math.Abs(gf-wf) <= tol+1e-9*math.Max(1, math.Abs(wf))
	}
	return strings.TrimSpace(text(got)) == strings.TrimSpace(text(want))
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	case float64:
		return x, true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
	}
	return 0, false
}

func text(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v)
}

func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return clip(string(b), 200)
}

func showRow(r []any) string {
	if len(r) == 1 {
		return show(r[0])
	}
	return show(r)
}

func tolNote(tol float64) string {
	if tol == 0 {
		return ""
	}
	return fmt.Sprintf(" (tolerance %g)", tol)
}

// normalize turns decoded JSON and driver values into the Answer value types.
func normalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		if f, err := x.Float64(); err == nil {
			return f
		}
		return x.String()
	case []byte:
		return string(x)
	case int:
		return int64(x)
	case float32:
		return float64(x)
	}
	return v
}
