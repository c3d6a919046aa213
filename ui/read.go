package ui

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/memory"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/policy"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/snapshot"
)

// Every statement here is built from constant pieces; values are bound.

// pageSize is the rows of one page; one more is read to know whether a
// next page exists.
const pageSize = 50

// maxSearchOffset bounds how deep search results page (each page is ranked
// from the top).
const maxSearchOffset = 5000

// agentOf is the agent in a session: the part after '@' (SPEC 11), ""
// for a local stdio session.
func agentOf(session string) string {
	if _, a, ok := strings.Cut(session, "@"); ok {
		return a
	}
	return ""
}

// localAgent is the agent filter's value for sessions without an agent.
const localAgent = "(local)"

// agentClause adds the filter for one agent's rows of a table with a
// session column.
func agentClause(where []string, args []any, col, agent string) ([]string, []any) {
	switch agent {
	case "":
	case localAgent:
		where = append(where, "instr("+col+", '@') = 0")
	default:
		where = append(where, "instr("+col+", '@') > 0 AND substr("+col+", instr("+col+", '@') + 1) = ?")
		args = append(args, agent)
	}
	return where, args
}

// dateClause adds from (inclusive) and to (inclusive, a whole day) on a
// ts column; both are YYYY-MM-DD or "".
func dateClause(where []string, args []any, col string, from, to time.Time) ([]string, []any) {
	if !from.IsZero() {
		where = append(where, col+" >= ?")
		args = append(args, from.UTC().Format(memory.TimeLayout))
	}
	if !to.IsZero() {
		where = append(where, col+" < ?")
		args = append(args, to.AddDate(0, 0, 1).UTC().Format(memory.TimeLayout))
	}
	return where, args
}

func whereSQL(where []string) string {
	if len(where) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(where, " AND ")
}

// item is one line of the timeline: an event or a checkpoint.
type item struct {
	Checkpoint bool
	ID         int64
	TS         string
	Session    string
	Agent      string
	Kind       string
	Text       string
	AtEvent    int64   // a checkpoint's last_event_id
	Score      float64 // search: -bm25
}

// timelineFilter is what the timeline's form asks.
type timelineFilter struct {
	Kind, Agent, Query string
	From, To           time.Time
	Before             int64 // keyset: ids below this
	Offset             int   // search: ranked rows to skip
}

type timelineResult struct {
	Items []item
	// Next is the keyset of the next page (0: none); NextOffset the
	// search's next offset (0: none).
	Next       int64
	NextOffset int
	Kinds      []string // kinds seen in the newest events, for the form
	Agents     []string
	Lag        string // the full-text index is behind, or missing
}

func (u *UI) readTimeline(ctx context.Context, f timelineFilter) (timelineResult, error) {
	var r timelineResult
	tx, err := u.begin(ctx)
	if err != nil {
		return r, err
	}
	defer tx.rollback()
	if r.Kinds, r.Agents, _, err = u.suggest(ctx, tx); err != nil {
		return r, err
	}
	switch {
	case f.Query != "":
		err = u.search(ctx, tx, f, &r)
	case f.Kind == "checkpoint":
		err = readCheckpoints(ctx, tx, f, &r)
	default:
		err = readEvents(ctx, tx, f, &r)
	}
	return r, err
}

// suggestTTL is how long the forms' suggestion lists are reused.
var suggestTTL = 10 * time.Second

// suggestions are the kinds and agents of the newest 200 events and the
// tools of the newest 200 calls, for the forms' lists (all of them would
// cost a scan of the tables); kept for suggestTTL.
type suggestions struct {
	mu                   sync.Mutex
	at                   time.Time
	kinds, agents, tools []string
}

func (u *UI) suggest(ctx context.Context, tx *rtx) (kinds, agents, tools []string, err error) {
	sg := &u.suggestions
	sg.mu.Lock()
	defer sg.mu.Unlock()
	if !sg.at.IsZero() && time.Since(sg.at) < suggestTTL {
		return sg.kinds, sg.agents, sg.tools, nil
	}
	ks, as, ts := map[string]bool{}, map[string]bool{}, map[string]bool{}
	err = eachRow(ctx, tx, `SELECT kind, session FROM memory_events ORDER BY id DESC LIMIT 200`, func(rows *sql.Rows) error {
		var k, s string
		if err := rows.Scan(&k, &s); err != nil {
			return err
		}
		ks[k] = true
		if a := agentOf(s); a != "" {
			as[a] = true
		}
		return nil
	})
	if err == nil {
		err = eachRow(ctx, tx, `SELECT tool FROM query_log ORDER BY id DESC LIMIT 200`, func(rows *sql.Rows) error {
			var t string
			if err := rows.Scan(&t); err != nil {
				return err
			}
			ts[t] = true
			return nil
		})
	}
	if err != nil {
		return nil, nil, nil, err
	}
	sg.at, sg.kinds, sg.agents, sg.tools = time.Now(), sortedKeys(ks), sortedKeys(as), sortedKeys(ts)
	return sg.kinds, sg.agents, sg.tools, nil
}

func eachRow(ctx context.Context, tx *rtx, q string, fn func(*sql.Rows) error) error {
	rows, err := tx.QueryContext(ctx, q)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func readEvents(ctx context.Context, tx *rtx, f timelineFilter, r *timelineResult) error {
	var where []string
	var args []any
	if f.Before > 0 {
		where, args = append(where, "id < ?"), append(args, f.Before)
	}
	if f.Kind != "" {
		where, args = append(where, "kind = ?"), append(args, f.Kind)
	}
	where, args = agentClause(where, args, "session", f.Agent)
	where, args = dateClause(where, args, "ts", f.From, f.To)
	rows, err := tx.QueryContext(ctx, `SELECT id, ts, session, kind, content FROM memory_events`+whereSQL(where)+
		` ORDER BY id DESC LIMIT ?`, append(args, pageSize+1)...)
	if err != nil {
		return err
	}
	var events []item
	for rows.Next() {
		var e item
		if err := rows.Scan(&e.ID, &e.TS, &e.Session, &e.Kind, &e.Text); err != nil {
			rows.Close()
			return err
		}
		e.Agent = agentOf(e.Session)
		events = append(events, e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	more := len(events) > pageSize
	if more {
		events = events[:pageSize]
		r.Next = events[pageSize-1].ID
	}
	if f.Kind != "" {
		r.Items = events
		return nil
	}
	// The checkpoints anchored in this page's span, each placed above the
	// event it is anchored to (it was written after it).
	var low int64
	if more {
		low = events[len(events)-1].ID
	}
	cw := []string{"last_event_id >= ?"}
	cargs := []any{low}
	if f.Before > 0 {
		cw, cargs = append(cw, "last_event_id < ?"), append(cargs, f.Before)
	}
	cw, cargs = agentClause(cw, cargs, "session", f.Agent)
	cw, cargs = dateClause(cw, cargs, "ts", f.From, f.To)
	cps, err := queryCheckpoints(ctx, tx, whereSQL(cw)+` ORDER BY last_event_id DESC, id DESC LIMIT 500`, cargs)
	if err != nil {
		return err
	}
	i := 0
	for _, e := range events {
		for ; i < len(cps) && cps[i].AtEvent >= e.ID; i++ {
			r.Items = append(r.Items, cps[i])
		}
		r.Items = append(r.Items, e)
	}
	r.Items = append(r.Items, cps[i:]...)
	return nil
}

func queryCheckpoints(ctx context.Context, tx *rtx, tail string, args []any) ([]item, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id, ts, session, summary, last_event_id FROM memory_checkpoints`+tail, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []item
	for rows.Next() {
		c := item{Checkpoint: true, Kind: "checkpoint"}
		if err := rows.Scan(&c.ID, &c.TS, &c.Session, &c.Text, &c.AtEvent); err != nil {
			return nil, err
		}
		c.Agent = agentOf(c.Session)
		out = append(out, c)
	}
	return out, rows.Err()
}

// readCheckpoints is the timeline of checkpoints alone (kind=checkpoint),
// keyset by checkpoint id.
func readCheckpoints(ctx context.Context, tx *rtx, f timelineFilter, r *timelineResult) error {
	var where []string
	var args []any
	if f.Before > 0 {
		where, args = append(where, "id < ?"), append(args, f.Before)
	}
	where, args = agentClause(where, args, "session", f.Agent)
	where, args = dateClause(where, args, "ts", f.From, f.To)
	cps, err := queryCheckpoints(ctx, tx, whereSQL(where)+` ORDER BY id DESC LIMIT ?`, append(args, pageSize+1))
	if err != nil {
		return err
	}
	if len(cps) > pageSize {
		cps = cps[:pageSize]
		r.Next = cps[pageSize-1].ID
	}
	r.Items = cps
	return nil
}

// search ranks the events that match the query as get_resume_context's
// recall does: the same FTS5 expression (memory.RecallQuery), bm25 rank,
// ties newest first. Filters narrow the matches.
func (u *UI) search(ctx context.Context, tx *rtx, f timelineFilter, r *timelineResult) error {
	expr, err := memory.RecallQuery(f.Query)
	if err != nil {
		r.Lag = "the search has no words to look for"
		return nil
	}
	var have, head, exists int64
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, memory.IndexEvents).Scan(&exists); err != nil {
		return err
	}
	if exists == 0 {
		r.Lag = "this file has no full-text index yet: a server (mcp-sqlite-memory --db ...) builds it when it starts"
		return nil
	}
	if err := tx.QueryRowContext(ctx, `SELECT (SELECT coalesce(max(id), 0) FROM `+memory.IndexEvents+`_docsize), (SELECT coalesce(max(id), 0) FROM memory_events)`).Scan(&have, &head); err != nil {
		return err
	}
	if have < head {
		r.Lag = "the full-text index reaches event " + strconv.FormatInt(have, 10) + " of " + strconv.FormatInt(head, 10) +
			": newer events are not searched until a server catches the index up"
	}
	var where []string
	args := []any{expr}
	if f.Kind != "" {
		where, args = append(where, "e.kind = ?"), append(args, f.Kind)
	}
	where, args = agentClause(where, args, "e.session", f.Agent)
	where, args = dateClause(where, args, "e.ts", f.From, f.To)
	var q string
	if len(where) == 0 {
		// Ranked and cut on the index alone, then joined (as recall does).
		q = `SELECT e.id, e.ts, e.session, e.kind, e.content, -x.rank FROM (SELECT rowid AS id, rank FROM ` + memory.IndexEvents +
			` WHERE ` + memory.IndexEvents + ` MATCH ? ORDER BY rank, rowid DESC LIMIT ? OFFSET ?) AS x JOIN memory_events e ON e.id = x.id ORDER BY x.rank, e.id DESC`
	} else {
		q = `SELECT e.id, e.ts, e.session, e.kind, e.content, -` + memory.IndexEvents + `.rank FROM ` + memory.IndexEvents +
			` JOIN memory_events e ON e.id = ` + memory.IndexEvents + `.rowid WHERE ` + memory.IndexEvents + ` MATCH ? AND ` +
			strings.Join(where, " AND ") + ` ORDER BY ` + memory.IndexEvents + `.rank, e.id DESC LIMIT ? OFFSET ?`
	}
	rows, err := tx.QueryContext(ctx, q, append(args, pageSize+1, f.Offset)...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var e item
		if err := rows.Scan(&e.ID, &e.TS, &e.Session, &e.Kind, &e.Text, &e.Score); err != nil {
			return err
		}
		e.Agent = agentOf(e.Session)
		r.Items = append(r.Items, e)
	}
	if len(r.Items) > pageSize {
		r.Items = r.Items[:pageSize]
		if f.Offset+pageSize <= maxSearchOffset {
			r.NextOffset = f.Offset + pageSize
		}
	}
	return rows.Err()
}

// call is one audit row.
type call struct {
	ID         int64
	TS         string
	Session    string
	Agent      string
	Tool       string
	Query      string
	HasQuery   bool
	OK         bool
	Rows       sql.NullInt64
	Error      string
	Code       string // the error's SPEC code
	Refused    bool   // the policy refused the statement
	DurationMS int64
	Detail     string
}

// refusals are the codes of a statement the server refused to run.
var refusals = map[errcode.Code]bool{
	errcode.ReadOnly: true, errcode.Policy: true, errcode.Protected: true,
	errcode.MultipleStatements: true, errcode.Declined: true,
}

// codeOf is the SPEC code an error text starts with, or "".
func codeOf(text string) string {
	code, _, ok := strings.Cut(text, ":")
	if !ok || code == "" {
		return ""
	}
	for _, c := range code {
		if !(c == '_' || c >= 'A' && c <= 'Z') {
			return ""
		}
	}
	return code
}

type activityFilter struct {
	Errors, Destructive bool
	Tool, Agent         string
	Before              int64
}

func (f activityFilter) where() ([]string, []any) {
	var where []string
	var args []any
	if f.Errors {
		where = append(where, "ok = 0")
	}
	if f.Destructive {
		where = append(where, "tool = 'destructive_query'")
	}
	if f.Tool != "" {
		where, args = append(where, "tool = ?"), append(args, f.Tool)
	}
	return agentClause(where, args, "session", f.Agent)
}

type activityResult struct {
	Calls []call
	Next  int64
	Tools []string
	Chart chart
}

func (u *UI) readActivity(ctx context.Context, f activityFilter) (activityResult, error) {
	var r activityResult
	tx, err := u.begin(ctx)
	if err != nil {
		return r, err
	}
	defer tx.rollback()
	if _, _, r.Tools, err = u.suggest(ctx, tx); err != nil {
		return r, err
	}

	where, args := f.where()
	if f.Before > 0 {
		where, args = append(where, "id < ?"), append(args, f.Before)
	}
	rows, err := tx.QueryContext(ctx, `SELECT id, ts, session, tool, query, ok, rows, error, duration_ms, detail FROM query_log`+
		whereSQL(where)+` ORDER BY id DESC LIMIT ?`, append(args, pageSize+1)...)
	if err != nil {
		return r, err
	}
	for rows.Next() {
		var c call
		var q, e, d sql.NullString
		if err := rows.Scan(&c.ID, &c.TS, &c.Session, &c.Tool, &q, &c.OK, &c.Rows, &e, &c.DurationMS, &d); err != nil {
			rows.Close()
			return r, err
		}
		c.Query, c.HasQuery, c.Error, c.Detail = q.String, q.Valid, e.String, d.String
		c.Agent = agentOf(c.Session)
		if !c.OK {
			c.Code = codeOf(c.Error)
			c.Refused = refusals[errcode.Code(c.Code)]
		}
		r.Calls = append(r.Calls, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return r, err
	}
	if len(r.Calls) > pageSize {
		r.Calls = r.Calls[:pageSize]
		r.Next = r.Calls[pageSize-1].ID
	}
	where, args = f.where()
	r.Chart, err = readChart(ctx, tx, where, args)
	return r, err
}

// snapshotFile is one file of the snapshot folder.
type snapshotFile struct {
	Name, Path string
	Taken      string
	Kind       string // full copy, undo record, safety copy of a restore
	Bytes      int64
	Reason     string
	Tool       string // the call that took it, from the audit
	Tables     string // undo: the tables it would change
	Rows       int64  // undo: the rows it would put back
	Undo       bool
	Problem    string // undo: why the record cannot be read
	Restore    string // the command that restores it
	DryRun     string
}

// stampLayout is the time in a snapshot's name (snapshot.FileName).
const stampLayout = "20060102T150405.000"

func (u *UI) readSnapshots(ctx context.Context) ([]snapshotFile, error) {
	entries, err := os.ReadDir(u.opt.SnapshotDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []snapshotFile
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || !snapshot.IsName(name, u.opt.Stem) {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		s := snapshotFile{Name: name, Path: filepath.Join(u.opt.SnapshotDir, name), Bytes: info.Size(), Kind: "full copy"}
		stamp := strings.TrimPrefix(name, u.opt.Stem+".")
		stamp, _, _ = strings.Cut(stamp, "Z")
		taken, _ := time.Parse(stampLayout, stamp)
		s.Taken = taken.UTC().Format(memory.TimeLayout)
		switch {
		case strings.HasSuffix(name, snapshot.UndoTag+".db"), strings.HasSuffix(name, snapshot.PreRestoreTag+".db") && snapshot.IsRecord(s.Path):
			s.Kind, s.Undo = "undo record", true
			if strings.HasSuffix(name, snapshot.PreRestoreTag+".db") {
				s.Kind = "undo record (safety copy taken by restore)"
			}
			rec, err := snapshot.ReadRecord(s.Path)
			if err != nil {
				s.Problem = err.Error()
			} else {
				s.Reason, s.Tables, s.Rows = rec.Reason, rec.Tables, rec.Rows
			}
		case strings.HasSuffix(name, snapshot.PreRestoreTag+".db"):
			s.Kind = "full copy (safety copy taken by restore)"
		}
		if s.Reason == "" || s.Tool == "" {
			if err := u.auditOf(ctx, &s, taken); err != nil {
				return nil, err
			}
		}
		s.Restore = "mcp-sqlite-memory restore --db " + shellQuote(u.abs) + " " + shellQuote(s.Path)
		s.DryRun = "mcp-sqlite-memory restore --db " + shellQuote(u.abs) + " --dry-run " + shellQuote(s.Path)
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name > out[j].Name })
	return out, nil
}

// auditOf finds the audit row of the call that took the snapshot: it
// started at most an hour before the snapshot's time (the ts index bounds
// the read) and names the file in its detail.
func (u *UI) auditOf(ctx context.Context, s *snapshotFile, taken time.Time) error {
	if taken.IsZero() {
		return nil
	}
	rows, err := u.db.QueryContext(ctx, `SELECT tool, coalesce(json_extract(detail, '$.reason'), query, ''), json_extract(detail, '$.snapshot') FROM query_log
		WHERE ts >= ? AND ts <= ? AND json_valid(detail) AND json_extract(detail, '$.snapshot') IS NOT NULL ORDER BY id DESC LIMIT 1000`,
		taken.Add(-time.Hour).UTC().Format(memory.TimeLayout), taken.Add(time.Second).UTC().Format(memory.TimeLayout))
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var tool, reason string
		var path sql.NullString
		if err := rows.Scan(&tool, &reason, &path); err != nil {
			return err
		}
		if path.Valid && filepath.Base(path.String) == s.Name {
			s.Tool = tool
			if s.Reason == "" {
				s.Reason = reason
			}
			return nil
		}
	}
	return rows.Err()
}

// shellQuote quotes s for a POSIX shell when it holds anything but
// characters that need no quoting.
func shellQuote(s string) string {
	safe := s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:=@%,", r))
	}) < 0
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// object is one of the agent's tables or views.
type object struct {
	Name, Type  string
	Rows        int64
	Counted     bool
	Description string
	SQL         string
}

func (u *UI) readTables(ctx context.Context) ([]object, error) {
	tx, err := u.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.rollback()
	types := map[string]string{}
	rows, err := tx.QueryContext(ctx, `SELECT name, type FROM pragma_table_list WHERE schema = 'main'`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var n, t string
		if err := rows.Scan(&n, &t); err != nil {
			rows.Close()
			return nil, err
		}
		types[n] = t
	}
	rows.Close()
	schema, err := rawsqlite.ReadSchema(func(text string) (*sql.Rows, error) { return tx.QueryContext(ctx, text) }, "main")
	if err != nil {
		return nil, err
	}
	var out []object
	var virtual []string
	for _, so := range schema {
		if so.Type != "table" && so.Type != "view" {
			continue
		}
		if types[so.Name] == "virtual" {
			virtual = append(virtual, so.Name)
		}
		out = append(out, object{Type: so.Type, Name: so.Name, SQL: so.SQL})
	}
	// Tables first, then views, each by name.
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Type != out[j].Type {
			return out[i].Type < out[j].Type
		}
		return out[i].Name < out[j].Name
	})
	kept := out[:0]
	for _, o := range out {
		if u.serverObject(o.Name, types[o.Name], virtual) {
			continue
		}
		if types[o.Name] == "virtual" {
			o.Type = "virtual table"
		}
		if o.Type == "view" {
			o.Description = viewDescription(o.SQL)
		} else {
			// count(*) of a table is a statement of our own; a view's
			// SELECT is the agent's, so views are never run.
			if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM "+rawsqlite.QuoteIdent(o.Name)).Scan(&o.Rows); err != nil {
				return nil, err
			}
			o.Counted = true
		}
		kept = append(kept, o)
	}
	return kept, nil
}

// serverObject reports whether a table or view is the server's: its own
// tables and view, SQLite's, and the shadow tables of a virtual table.
func (u *UI) serverObject(name, listType string, virtual []string) bool {
	if strings.HasPrefix(rawsqlite.FoldName(name), "sqlite_") || policy.IsServerObject(name, name) {
		return true
	}
	if listType == "shadow" {
		return true
	}
	for _, v := range virtual {
		if strings.HasPrefix(rawsqlite.FoldName(name), rawsqlite.FoldName(v)+"_") && listType != "virtual" {
			return true
		}
	}
	return false
}

// viewDescription is the text of the view's "-- description:" line
// (create_view's, SPEC 5.2), or "".
func viewDescription(sqlText string) string {
	for _, line := range strings.Split(sqlText, "\n") {
		if d, ok := strings.CutPrefix(strings.TrimSpace(line), "-- description:"); ok {
			return strings.TrimSpace(d)
		}
	}
	return ""
}
