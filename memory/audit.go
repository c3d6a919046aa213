package memory

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// AuditEntry is one tool call, one query_log row.
type AuditEntry struct {
	// TS is when the call started; zero means now. Stored as TimeLayout.
	TS      time.Time
	Session string
	Tool    string
	// Query is the agent's SQL (or the tool's main argument); NULL when
	// the tool has none.
	Query sql.NullString
	OK    bool
	// Rows is the rows returned or affected; NULL when not applicable.
	Rows sql.NullInt64
	// Error is the error text the agent saw; "" is stored as NULL.
	Error    string
	Duration time.Duration // stored as whole milliseconds
	// Detail (limits, reasons, snapshot paths, previous view SQL) is
	// stored as a JSON object; nil or empty is NULL, as in the reference.
	Detail map[string]any
}

// Auditor records tool calls. An Auditor must be safe for concurrent use.
type Auditor interface {
	Audit(ctx context.Context, e AuditEntry) error
}

// Audit writes one query_log row into the memory database.
func (s *Store) Audit(ctx context.Context, e AuditEntry) error {
	return s.audit.write(ctx, e)
}

// AuditDB is a separate audit file (--audit-db), for the read-only profile:
// it holds only query_log, its index and triggers, and the query_errors view.
type AuditDB struct {
	db   *sql.DB
	path string
	w    *auditWriter
}

var _ Auditor = (*AuditDB)(nil)

// OpenAudit opens or creates the audit database at path (and its parent
// folder), in WAL mode, with the query_log part of the server schema.
func OpenAudit(ctx context.Context, path string, log hclog.Logger) (*AuditDB, error) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return nil, fmt.Errorf("memory: create audit folder: %w", err)
	}
	db, err := openDB(ctx, abs, true, log)
	if err != nil {
		return nil, err
	}
	if err = checkColumns(ctx, db, TableQueryLog); err == nil {
		err = bootstrap(ctx, db, auditDDL)
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("memory: audit database %s: %w", abs, err)
	}
	return &AuditDB{db: db, path: abs, w: &auditWriter{db: db, mu: new(sync.Mutex), now: time.Now}}, nil
}

// Audit writes one query_log row into the audit file.
func (a *AuditDB) Audit(ctx context.Context, e AuditEntry) error { return a.w.write(ctx, e) }

// Path returns the absolute path of the audit file.
func (a *AuditDB) Path() string { return a.path }

// Close closes the audit file.
func (a *AuditDB) Close() error {
	a.w.close()
	return a.db.Close()
}

// auditWriter is the query_log insert shared by Store and AuditDB.
type auditWriter struct {
	db   *sql.DB
	mu   *sync.Mutex // the owner's write mutex
	now  func() time.Time
	stmt *sql.Stmt // prepared on first use, under mu
}

const insertAudit = `INSERT INTO query_log (ts, session, tool, query, ok, rows, error, duration_ms, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`

func (w *auditWriter) write(ctx context.Context, e AuditEntry) error {
	ts := e.TS
	if ts.IsZero() {
		ts = w.now()
	}
	var errText, detail sql.NullString
	if e.Error != "" {
		errText = sql.NullString{String: e.Error, Valid: true}
	}
	if len(e.Detail) > 0 {
		detail = sql.NullString{String: DetailJSON(e.Detail), Valid: true}
	}
	ok := 0
	if e.OK {
		ok = 1
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stmt == nil {
		st, err := w.db.PrepareContext(ctx, insertAudit)
		if err != nil {
			return fmt.Errorf("memory: audit: %w", err)
		}
		w.stmt = st
	}
	// Autocommit: one INSERT is its own transaction.
	if _, err := w.stmt.ExecContext(ctx, ts.UTC().Format(TimeLayout), e.Session, e.Tool, e.Query, ok, e.Rows,
		errText, e.Duration.Milliseconds(), detail); err != nil {
		return fmt.Errorf("memory: audit: %w", err)
	}
	return nil
}

func (w *auditWriter) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stmt != nil {
		w.stmt.Close()
		w.stmt = nil
	}
}

// NewLogAuditor returns an Auditor that only logs each call (at Info, or
// Warn for failures) through log: the read-only profile's audit trail on
// stderr.
func NewLogAuditor(log hclog.Logger) Auditor {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return logAuditor{log: log}
}

type logAuditor struct{ log hclog.Logger }

func (l logAuditor) Audit(_ context.Context, e AuditEntry) error {
	args := []any{"session", e.Session, "tool", e.Tool, "ok", e.OK, "duration_ms", e.Duration.Milliseconds()}
	if e.Query.Valid {
		args = append(args, "query", e.Query.String)
	}
	if e.Rows.Valid {
		args = append(args, "rows", e.Rows.Int64)
	}
	if e.Error != "" {
		args = append(args, "error", e.Error)
	}
	if len(e.Detail) > 0 {
		args = append(args, "detail", DetailJSON(e.Detail))
	}
	if e.OK {
		l.log.Info("audit", args...)
	} else {
		l.log.Warn("audit", args...)
	}
	return nil
}

// MultiAuditor writes every entry to each of auditors (nil ones skipped) and
// joins their errors: one failing sink does not stop the others.
func MultiAuditor(auditors ...Auditor) Auditor {
	var list multiAuditor
	for _, a := range auditors {
		if a != nil {
			list = append(list, a)
		}
	}
	return list
}

type multiAuditor []Auditor

func (m multiAuditor) Audit(ctx context.Context, e AuditEntry) error {
	var errs []error
	for _, a := range m {
		if err := a.Audit(ctx, e); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// DetailJSON encodes a query_log detail object the way the reference's
// json.dumps(detail, ensure_ascii=False) does: ", " and ": " separators,
// non-ASCII raw, floats in Python's repr form. Go maps have no order, so
// keys are sorted. Types it does not know (structs, ...) are encoded by
// encoding/json.
func DetailJSON(detail map[string]any) string {
	return string(appendPyJSON(nil, detail))
}

func appendPyJSON(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case string:
		return appendJSONString(b, x, false)
	case bool:
		return strconv.AppendBool(b, x)
	case int:
		return strconv.AppendInt(b, int64(x), 10)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case int32:
		return strconv.AppendInt(b, int64(x), 10)
	case uint64:
		return strconv.AppendUint(b, x, 10)
	case uint:
		return strconv.AppendUint(b, uint64(x), 10)
	case float64:
		return appendPyFloat(b, x)
	case float32:
		return appendPyFloat(b, float64(x))
	case time.Duration:
		return strconv.AppendInt(b, x.Milliseconds(), 10)
	case error:
		return appendJSONString(b, x.Error(), false)
	case fmt.Stringer:
		return appendJSONString(b, x.String(), false)
	case []string:
		b = append(b, '[')
		for i, s := range x {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = appendJSONString(b, s, false)
		}
		return append(b, ']')
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = appendPyJSON(b, e)
		}
		return append(b, ']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = appendJSONString(b, k, false)
			b = append(b, ": "...)
			b = appendPyJSON(b, x[k])
		}
		return append(b, '}')
	}
	// Pointers to known types, and everything else.
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return append(b, "null"...)
		}
		return appendPyJSON(b, rv.Elem().Interface())
	}
	enc, err := json.Marshal(v)
	if err != nil {
		return appendJSONString(b, fmt.Sprint(v), false)
	}
	return append(b, enc...)
}

// appendPyFloat writes f as Python's repr does: shortest round-trip digits,
// always with a '.0' or an exponent; exponent form below 1e-4 and from 1e16.
// NaN and infinities, which JSON lacks, are written as Python writes them.
func appendPyFloat(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, 1):
		return append(b, "Infinity"...)
	case math.IsInf(f, -1):
		return append(b, "-Infinity"...)
	}
	if a := math.Abs(f); a != 0 && (a < 1e-4 || a >= 1e16) {
		return strconv.AppendFloat(b, f, 'e', -1, 64)
	}
	start := len(b)
	b = strconv.AppendFloat(b, f, 'f', -1, 64)
	for _, c := range b[start:] {
		if c == '.' {
			return b
		}
	}
	return append(b, ".0"...)
}
