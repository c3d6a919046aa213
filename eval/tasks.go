package eval

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

//go:embed tasks.json
var tasksJSON []byte

// Task is one evaluation question.
type Task struct {
	ID       string       `json:"id"`
	Question string       `json:"question"`
	Answer   AnswerSchema `json:"answer"`
	// ReferenceSQL computes the reference answer directly with SQLite; it is
	// never shown to a model. Empty for TypeRefusal tasks.
	ReferenceSQL string  `json:"reference_sql,omitempty"`
	Order        string  `json:"order,omitempty"`     // OrderExact or OrderAny; lists and rows
	Tolerance    float64 `json:"tolerance,omitempty"` // absolute, for numbers
	// Script is what a competent agent would send through the tools; the
	// scripted solver replays it.
	Script []ScriptedCall `json:"script"`
}

// ScriptedCall is one tool call of a task's script.
type ScriptedCall struct {
	Tool string         `json:"tool"`
	Args map[string]any `json:"args"`
	// Extract, when set, takes answer rows from the call's JSON result.
	Extract *Extract `json:"extract,omitempty"`
	// ExpectError, when set, is the error code the call must fail with.
	ExpectError string `json:"expect_error,omitempty"`
}

// Extract says which answer rows a tool result holds. From "rows" reads a
// query_database result (following hasMore with offset); any other From
// names an array of objects in the result, such as "tables", "columns" or
// "foreignKeys". Fields pick the values of each answer row, in answer column
// order: result columns for "rows", object keys otherwise (a key missing from
// the object is looked up in the result's top level, e.g. "table"). Where
// keeps only the objects whose keys have the given values.
type Extract struct {
	From   string         `json:"from"`
	Fields []string       `json:"fields,omitempty"`
	Where  map[string]any `json:"where,omitempty"`
}

// LoadTasks returns the embedded tasks, validated, in file order.
func LoadTasks() ([]Task, error) {
	return ParseTasks(tasksJSON)
}

// ParseTasks decodes and validates a task file (a JSON array of tasks).
func ParseTasks(data []byte) ([]Task, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var tasks []Task
	if err := dec.Decode(&tasks); err != nil {
		return nil, fmt.Errorf("eval: tasks: %w", err)
	}
	seen := map[string]bool{}
	for i, t := range tasks {
		if err := t.validate(); err != nil {
			return nil, fmt.Errorf("eval: task %d (%q): %w", i+1, t.ID, err)
		}
		if seen[t.ID] {
			return nil, fmt.Errorf("eval: task %d: duplicate id %q", i+1, t.ID)
		}
		seen[t.ID] = true
	}
	return tasks, nil
}

func (t Task) validate() error {
	switch {
	case t.ID == "":
		return errors.New("empty id")
	case t.Question == "":
		return errors.New("empty question")
	case t.Tolerance < 0:
		return errors.New("negative tolerance")
	case len(t.Script) == 0:
		return errors.New("empty script")
	}
	switch t.Answer.Type {
	case TypeScalar, TypeRefusal:
	case TypeRows:
		if len(t.Answer.Columns) == 0 {
			return errors.New("rows answer without columns")
		}
		if slices.Contains(t.Answer.Columns, "") {
			return errors.New("empty column name")
		}
		fallthrough
	case TypeList:
		if t.Order != OrderExact && t.Order != OrderAny {
			return fmt.Errorf("order %q, want %q or %q", t.Order, OrderExact, OrderAny)
		}
	default:
		return fmt.Errorf("unknown answer type %q", t.Answer.Type)
	}
	if (t.Answer.Type == TypeRefusal) != (t.ReferenceSQL == "") {
		return errors.New("reference_sql is required, except for refusal tasks")
	}
	extracts, expects := 0, 0
	for i, c := range t.Script {
		if c.Tool == "" {
			return fmt.Errorf("script call %d: empty tool", i+1)
		}
		if c.Extract != nil {
			extracts++
			if c.Extract.From == "" {
				return fmt.Errorf("script call %d: extract without from", i+1)
			}
			if c.Extract.From != "rows" && len(c.Extract.Fields) == 0 {
				return fmt.Errorf("script call %d: extract from %q needs fields", i+1, c.Extract.From)
			}
		}
		if c.ExpectError != "" {
			expects++
		}
	}
	if t.Answer.Type == TypeRefusal && expects == 0 {
		return errors.New("refusal task without an expect_error call")
	}
	if t.Answer.Type != TypeRefusal && extracts == 0 {
		return errors.New("script extracts no answer")
	}
	return nil
}
