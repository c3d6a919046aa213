package eval

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Reference computes t's reference answer by running t.ReferenceSQL on the
// database at dbPath, opened read-only. A refusal task's reference is always
// StatusRefused: the read-only profile must refuse every write.
func Reference(ctx context.Context, dbPath string, t Task) (Answer, error) {
	if t.Answer.Type == TypeRefusal {
		return Answer{Type: TypeRefusal, Status: StatusRefused}, nil
	}
	// mode=ro would report a missing file only as "unable to open".
	if _, err := os.Stat(dbPath); err != nil {
		return Answer{}, fmt.Errorf("eval: reference %s: %w", t.ID, err)
	}
	db, err := sql.Open("sqlite", fileURI(dbPath, "mode=ro"))
	if err != nil {
		return Answer{}, fmt.Errorf("eval: reference %s: %w", t.ID, err)
	}
	defer db.Close()
	rows, err := queryAll(ctx, db, t.ReferenceSQL)
	if err != nil {
		return Answer{}, fmt.Errorf("eval: reference %s: %w", t.ID, err)
	}
	a, err := buildAnswer(t.Answer, rows)
	if err != nil {
		return Answer{}, fmt.Errorf("eval: reference %s: %w", t.ID, err)
	}
	return a, nil
}

func queryAll(ctx context.Context, db *sql.DB, q string, args ...any) ([][]any, error) {
	rs, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	cols, err := rs.Columns()
	if err != nil {
		return nil, err
	}
	var out [][]any
	for rs.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rs.Scan(ptrs...); err != nil {
			return nil, err
		}
		for i, v := range vals {
			vals[i] = normalize(v)
		}
		out = append(out, vals)
	}
	return out, rs.Err()
}

// buildAnswer shapes rows of values into an answer of schema s.
func buildAnswer(s AnswerSchema, rows [][]any) (Answer, error) {
	a := Answer{Type: s.Type}
	switch s.Type {
	case TypeScalar:
		if len(rows) != 1 || len(rows[0]) == 0 {
			return a, fmt.Errorf("scalar answer from %d rows, want 1", len(rows))
		}
		a.Value = rows[0][0]
	case TypeList:
		a.Items = make([]any, 0, len(rows))
		for _, r := range rows {
			if len(r) == 0 {
				return a, errors.New("list answer from a row without columns")
			}
			a.Items = append(a.Items, r[0])
		}
	case TypeRows:
		a.Rows = make([][]any, 0, len(rows))
		for i, r := range rows {
			if len(r) != len(s.Columns) {
				return a, fmt.Errorf("row %d has %d values, want %d (%s)", i+1, len(r), len(s.Columns), strings.Join(s.Columns, ", "))
			}
			a.Rows = append(a.Rows, r)
		}
	default:
		return a, fmt.Errorf("cannot build a %q answer from rows", s.Type)
	}
	return a, nil
}

// fileURI makes a SQLite URI for path, escaping the characters that would
// otherwise end the path ('?', '#') or start an escape ('%').
func fileURI(path, params string) string {
	p := filepath.ToSlash(path)
	p = strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(p)
	if params != "" {
		return "file:" + p + "?" + params
	}
	return "file:" + p
}
