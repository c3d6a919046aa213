package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/memory"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/policy"
)

// Argument bounds that do not come from the configuration.
const (
	maxOffset          = 1 << 40 // a sanity bound; offsets are stepped, so deep pages cost time
	maxResumeEvents    = 1000
	searchDefaultLimit = 100
	defaultContext     = 80
	maxContextChars    = 1000
)

// hints are a tool's MCP behaviour hints, in the spec's meanings:
// destructive means it may overwrite or remove data (false: it only adds),
// idempotent means a repeated call with the same arguments changes nothing
// more. Audit rows, written for every call, are bookkeeping and not
// counted as a change.
type hints struct {
	readOnly, destructive, idempotent bool
}

var (
	readsOnly = hints{readOnly: true, idempotent: true}
	onlyAdds  = hints{}
)

// newTool declares a tool with its human title (top-level title of MCP
// 2025-06-18 and later, and annotations.title for older hosts), its hints
// with openWorldHint false (the tools touch one local file), and an input
// schema that admits no argument it does not list.
func newTool(name, title string, h hints, opts ...mcp.ToolOption) mcp.Tool {
	base := []mcp.ToolOption{
		mcp.WithToolTitle(title),
		mcp.WithToolAnnotation(mcp.ToolAnnotation{
			Title:           title,
			ReadOnlyHint:    mcp.ToBoolPtr(h.readOnly),
			DestructiveHint: mcp.ToBoolPtr(h.destructive),
			IdempotentHint:  mcp.ToBoolPtr(h.idempotent),
			OpenWorldHint:   mcp.ToBoolPtr(false),
		}),
		mcp.WithSchemaAdditionalProperties(false),
	}
	return mcp.NewTool(name, append(base, opts...)...)
}

// stringOrStrings lets a property be an array of strings or one string,
// so that hosts validating arguments against the schema accept both forms
// of a list (get_resume_context's exclude_kinds).
func stringOrStrings() mcp.PropertyOption {
	return func(schema map[string]any) {
		schema["anyOf"] = []any{
			map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
			map[string]any{"type": "string"},
		}
	}
}

// searchLimit is search_text's default limit, within --max-rows.
// asksText tells the agent, in a tool's description, that the server may
// ask the person before the call runs (SPEC 5.5).
func (s *Server) asksText(tool string) string {
	switch {
	case !s.mustConfirm(tool):
		return ""
	case tool == "write_query":
		return " Statements that overwrite rows (UPDATE, REPLACE, upserts) first run as a dry run, and the server may ask the user to allow them (MCP elicitation); DECLINED means the user said no and nothing changed: do not retry it."
	case tool == "create_view":
		return " With replace=true the server may ask the user to allow it first (MCP elicitation); DECLINED means the user said no and nothing changed."
	}
	return " Before it runs, the server dry-runs it and may ask the user to allow it, showing what it would change (MCP elicitation); DECLINED means the user said no and nothing changed: do not retry it, ask the user what they want instead."
}

func (s *Server) searchLimit() int { return min(searchDefaultLimit, s.cfg.MaxRows) }

func (s *Server) registerMemory() {
	c := s.cfg
	s.mcp.AddTool(newTool("read_query", "Read query (SELECT)", readsOnly,
		mcp.WithDescription(fmt.Sprintf("Run ONE read-only SQL statement (SELECT, WITH ... SELECT, EXPLAIN, or an introspection PRAGMA such as table_info) and get CSV with a '# N rows' trailer. NULL is an empty field, the empty string is \"\". Page with limit (default %d, max %d) and offset; the trailer says when more rows exist. format=\"json\" returns {columns, rows, returnedRows, limit, offset, hasMore}. Writes are refused: use write_query or destructive_query.", c.DefaultLimit, c.MaxRows)),
		mcp.WithString("query", mcp.Required(), mcp.MinLength(1), mcp.Description("one SELECT / WITH / EXPLAIN / introspection PRAGMA statement")),
		mcp.WithInteger("limit", mcp.Min(1), mcp.Max(c.MaxRows), mcp.DefaultNumber(c.DefaultLimit), mcp.Description("rows to return")),
		mcp.WithInteger("offset", mcp.Min(0), mcp.Max(maxOffset), mcp.DefaultNumber(0), mcp.Description("rows to skip first")),
		mcp.WithString("format", mcp.Enum("csv", "json"), mcp.DefaultString("csv"), mcp.Description("csv, or json for {columns, rows, ...}")),
	), s.handle("read_query", false, s.readQuery))

	// UPDATE, REPLACE and upserts overwrite rows without a snapshot, so
	// write_query is destructive in the MCP sense, though it removes nothing.
	s.mcp.AddTool(newTool("write_query", "Write query (INSERT, UPDATE, CREATE)", hints{destructive: true},
		mcp.WithDescription(fmt.Sprintf("Run ONE INSERT, UPDATE, upsert, REPLACE, CREATE TABLE, CREATE INDEX or CREATE VIRTUAL TABLE (fts5, rtree). Answers 'ok: N rows affected (last_insert_rowid=K)' or 'ok: schema statement executed'; RETURNING rows follow as CSV. An UPDATE changing more than %d rows is rolled back. DELETE, DROP, ALTER and triggers need destructive_query; views need create_view.%s", c.MaxUpdateRows, s.asksText("write_query"))),
		mcp.WithString("query", mcp.Required(), mcp.MinLength(1), mcp.Description("one writing SQL statement")),
	), s.handle("write_query", false, s.writeQuery))

	// Not idempotent: every call takes a new snapshot, and a repeated
	// statement may remove or change more.
	s.mcp.AddTool(newTool("destructive_query", "Destructive query (snapshot first)", hints{destructive: true},
		mcp.WithDescription("Run ONE DELETE, DROP (table, view, index, trigger), ALTER TABLE, CREATE/DROP TRIGGER or bulk UPDATE. The statement is checked first, then snapshotted (a copy of the database, or for a large one an undo record of exactly what the statement changes), then it runs; the answer names the snapshot file. reason is required and logged. The server's own tables can never be changed."+s.asksText("destructive_query")),
		mcp.WithString("query", mcp.Required(), mcp.MinLength(1), mcp.Description("one destructive SQL statement")),
		mcp.WithString("reason", mcp.Required(), mcp.MinLength(1), mcp.Description("why this change is needed (kept in the audit log)")),
	), s.handle("destructive_query", false, s.destructiveQuery))

	s.mcp.AddTool(newTool("list_tables", "List tables and views", readsOnly,
		mcp.WithDescription("List tables and views as CSV name,type,system,rows. system=1 marks the server's own tables (memory log, audit log), which are readable but cannot be changed."),
		mcp.WithBoolean("include_row_counts", mcp.DefaultBool(true), mcp.Description("count the rows of each table")),
	), s.handle("list_tables", false, s.listTables))

	s.mcp.AddTool(newTool("describe_table", "Describe a table or view", readsOnly,
		mcp.WithDescription("Describe a table or view: CSV sections '# columns' (cid,name,type,notnull,default,pk), '# foreign_keys' (from,to_table,to_column) and '# indexes' (name,unique,origin,columns)."),
		mcp.WithString("table", mcp.Required(), mcp.MinLength(1), mcp.Description("table or view name")),
	), s.handle("describe_table", false, s.describeTable))

	s.mcp.AddTool(newTool("get_schema", "Show the schema", readsOnly,
		mcp.WithDescription("Every CREATE statement as stored (tables, indexes, views, triggers). Views saved with create_view carry a '-- description:' line: they are reusable queries from earlier sessions."),
		mcp.WithBoolean("include_system", mcp.DefaultBool(false), mcp.Description("also show the server's own objects")),
	), s.handle("get_schema", false, s.getSchema))

	// replace=true overwrites a view's definition (the old SQL is kept in
	// the audit log): destructive. Repeating a call changes nothing more:
	// the view is the same, or the second call is refused.
	s.mcp.AddTool(newTool("create_view", "Save a query as a view", hints{destructive: true, idempotent: true},
		mcp.WithDescription("Save a SELECT as a named view with a description, so later sessions find it in get_schema and can query it by name. The SELECT is checked as read-only first."+s.asksText("create_view")),
		mcp.WithString("name", mcp.Required(), mcp.Pattern(`^[A-Za-z_][A-Za-z0-9_]*$`), mcp.Description("view name: letters, digits, underscores, not starting with a digit")),
		mcp.WithString("select_sql", mcp.Required(), mcp.MinLength(1), mcp.Description("one SELECT or WITH ... SELECT statement")),
		mcp.WithString("description", mcp.DefaultString(""), mcp.Description("what the view answers; stored inside its SQL")),
		mcp.WithBoolean("replace", mcp.DefaultBool(false), mcp.Description("replace an existing view (its previous SQL is kept in the audit log)")),
	), s.handle("create_view", false, s.createView))

	s.mcp.AddTool(newTool("append_event", "Append a memory event", onlyAdds,
		mcp.WithDescription("Append a note, decision or finding to the append-only, hash-chained memory log. The server computes the hash; events can never be edited or deleted."),
		mcp.WithString("content", mcp.Required(), mcp.MinLength(1), mcp.Description("the event text")),
		mcp.WithString("kind", mcp.DefaultString("note"), mcp.Description("a short category such as note, decision, finding, todo")),
	), s.handle("append_event", false, s.appendEvent))

	// Not destructive: it only adds a file beside the database (rotation
	// removes old snapshots, never data). Not idempotent: every call adds
	// one.
	s.mcp.AddTool(newTool("snapshot", "Snapshot the database", onlyAdds,
		mcp.WithDescription("Write a full copy of the database file now, with the same online backup, naming and rotation as destructive_query's snapshots (the newest --snapshots are kept in the snapshot folder). Answers 'ok: snapshot written: PATH', or 'ok: snapshot skipped (disabled or target unavailable)' when snapshots are off or the folder cannot be written; it never fails for that. reason is kept in the audit log."),
		mcp.WithString("reason", mcp.DefaultString("manual"), mcp.Description("why the snapshot is taken, e.g. \"before a refactor\" (kept in the audit log)")),
	), s.handle("snapshot", false, s.snapshotTool))

	s.mcp.AddTool(newTool("verify_chain", "Verify the memory chain", readsOnly,
		mcp.WithDescription("Recompute the whole memory chain. Answers {\"ok\": true, \"events\": N, \"head_id\": N, \"head_hash\": ...}, or the first broken event id and why."),
	), s.handle("verify_chain", false, s.verifyChain))

	s.mcp.AddTool(newTool("checkpoint", "Write a checkpoint", onlyAdds,
		mcp.WithDescription("Store a summary of the current state, anchored to the latest event; get_resume_context shows it first in the next session."),
		mcp.WithString("summary", mcp.Required(), mcp.MinLength(1), mcp.Description("what a fresh session needs to know to carry on")),
	), s.handle("checkpoint", false, s.checkpoint))

	s.mcp.AddTool(newTool("get_resume_context", "Resume context (call first)", readsOnly,
		mcp.WithDescription("Call this FIRST in a new session or after a context compaction: the latest checkpoint, the events since it (CSV id,ts,kind,content, oldest first; when they overflow the byte cap the oldest are dropped, never the newest, and a line says how many) and whether the memory chain verifies. exclude_kinds hides kinds such as hook-written raw events. With query, also the older events most relevant to it (full-text, ranked by bm25) in a section of their own with a score column."),
		mcp.WithInteger("max_events", mcp.Min(1), mcp.Max(maxResumeEvents), mcp.DefaultNumber(memory.DefaultMaxEvents), mcp.Description("most recent events to show")),
		mcp.WithAny("exclude_kinds", stringOrStrings(), mcp.DefaultString(""), mcp.Description("event kinds to leave out: an array, or one comma-separated string such as \"prompt,compaction\"")),
		mcp.WithString("query", mcp.Description(`words to recall older events by, e.g. "login cookie" (any word matches, more and rarer words rank higher; "a phrase" and prefix* work)`)),
	), s.handle("get_resume_context", false, s.resumeContext))

	s.mcp.AddTool(newTool("search_text", "Search text in a table", readsOnly,
		mcp.WithDescription(fmt.Sprintf("Find text inside a table or view: SQL narrows the rows (where, at most %d candidates), then a regular expression (RE2 syntax) matches the chosen text columns. Answers CSV key,column,snippet plus totals.", c.SearchCandidates)),
		mcp.WithString("pattern", mcp.Required(), mcp.MinLength(1), mcp.Description("regular expression (RE2), or literal text with fixed_strings=true")),
		mcp.WithString("table", mcp.Required(), mcp.MinLength(1), mcp.Description("table or view to search")),
		mcp.WithArray("columns", mcp.WithStringItems(), mcp.Description("columns to search (default: the text columns)")),
		mcp.WithString("where", mcp.Description("SQL condition that narrows the candidate rows, e.g. kind = 'note'")),
		mcp.WithString("key_column", mcp.Description("column that identifies a row in the output (default rowid; required for views)")),
		mcp.WithInteger("limit", mcp.Min(1), mcp.Max(c.MaxRows), mcp.DefaultNumber(s.searchLimit()), mcp.Description("matching values to return")),
		mcp.WithBoolean("ignore_case", mcp.DefaultBool(false), mcp.Description("case-insensitive match")),
		mcp.WithBoolean("fixed_strings", mcp.DefaultBool(false), mcp.Description("treat pattern as literal text")),
		mcp.WithInteger("context_chars", mcp.Min(0), mcp.Max(maxContextChars), mcp.DefaultNumber(defaultContext), mcp.Description("characters of context on each side of the match")),
	), s.handle("search_text", false, s.searchText))
}

func (s *Server) limitHint() string {
	return fmt.Sprintf("page with offset to see more than %d rows", s.cfg.MaxRows)
}

func (s *Server) readQuery(_ context.Context, c *call, a args) (outcome, error) {
	if err := a.only("query", "limit", "offset", "format"); err != nil {
		return outcome{}, err
	}
	q, err := a.str("query", true, "")
	if err != nil {
		return outcome{}, err
	}
	c.setQuery(q)
	limit, err := a.int("limit", s.cfg.DefaultLimit, 1, s.cfg.MaxRows, s.limitHint())
	if err != nil {
		return outcome{}, err
	}
	offset, err := a.int("offset", 0, 0, maxOffset, "")
	if err != nil {
		return outcome{}, err
	}
	format, err := a.str("format", false, "csv")
	if err != nil {
		return outcome{}, err
	}
	if format != "csv" && format != "json" {
		return outcome{}, invalid("format must be \"csv\" or \"json\", got %q", format)
	}
	c.detail["limit"], c.detail["offset"], c.detail["format"] = limit, offset, format
	req := s.request(ipc.OpQuery, "read")
	req.SQL, req.Limit, req.Offset, req.Format = q, limit, offset, format
	return s.answer(c, req)
}

func (s *Server) writeQuery(_ context.Context, c *call, a args) (outcome, error) {
	if err := a.only("query"); err != nil {
		return outcome{}, err
	}
	q, err := a.str("query", true, "")
	if err != nil {
		return outcome{}, err
	}
	c.setQuery(q)
	c.detail["max_update_rows"] = s.cfg.MaxUpdateRows
	req := s.request(ipc.OpQuery, "write")
	req.SQL = q
	return s.confirmed(c, "write_query", req, "", argsDigest("write_query", q), true)
}

func (s *Server) destructiveQuery(_ context.Context, c *call, a args) (outcome, error) {
	if err := a.only("query", "reason"); err != nil {
		return outcome{}, err
	}
	q, err := a.str("query", true, "")
	if err != nil {
		return outcome{}, err
	}
	c.setQuery(q)
	reason, err := a.str("reason", true, "")
	if err != nil {
		return outcome{}, invalid("reason is required: say in a sentence why this destructive change is needed")
	}
	c.detail["reason"] = reason
	req := s.request(ipc.OpQuery, "destructive")
	req.SQL = q
	req.Snapshot = &ipc.Snapshot{Dir: s.cfg.SnapshotDir, Stem: Stem(s.dbPath), Keep: s.cfg.Snapshots,
		Mode: s.cfg.SnapshotMode, FullMB: s.cfg.SnapshotFullMB, Reason: reason}
	return s.confirmed(c, "destructive_query", req, reason, argsDigest("destructive_query", q, reason), true)
}

func (s *Server) listTables(_ context.Context, c *call, a args) (outcome, error) {
	if err := a.only("include_row_counts"); err != nil {
		return outcome{}, err
	}
	counts, err := a.bool("include_row_counts", true)
	if err != nil {
		return outcome{}, err
	}
	req := s.request(ipc.OpListTables, "read")
	req.Table = &ipc.Table{RowCounts: counts}
	return s.answer(c, req)
}

func (s *Server) describeTable(_ context.Context, c *call, a args) (outcome, error) {
	if err := a.only("table"); err != nil {
		return outcome{}, err
	}
	name, err := a.str("table", true, "")
	if err != nil {
		return outcome{}, err
	}
	c.setQuery(name)
	// The readonly profile answers its own JSON shape under its policy.
	readonly := s.cfg.Profile == ProfileReadonly
	mode := "read"
	if readonly {
		mode = "select"
	}
	req := s.request(ipc.OpDescribeTable, mode)
	req.Table = &ipc.Table{Name: name, JSON: readonly}
	return s.answer(c, req)
}

func (s *Server) getSchema(_ context.Context, c *call, a args) (outcome, error) {
	if err := a.only("include_system"); err != nil {
		return outcome{}, err
	}
	all, err := a.bool("include_system", false)
	if err != nil {
		return outcome{}, err
	}
	req := s.request(ipc.OpSchema, "read")
	req.Table = &ipc.Table{IncludeSystem: all}
	return s.answer(c, req)
}

func (s *Server) createView(_ context.Context, c *call, a args) (outcome, error) {
	if err := a.only("name", "select_sql", "description", "replace"); err != nil {
		return outcome{}, err
	}
	name, err := a.str("name", true, "")
	if err != nil {
		return outcome{}, err
	}
	if !policy.ValidViewName(name) {
		return outcome{}, invalid("name %q must match ^[A-Za-z_][A-Za-z0-9_]*$ (letters, digits, underscores; not starting with a digit)", name)
	}
	sel, err := a.str("select_sql", true, "")
	if err != nil {
		return outcome{}, err
	}
	c.setQuery(sel)
	desc, err := a.str("description", false, "")
	if err != nil {
		return outcome{}, err
	}
	replace, err := a.bool("replace", false)
	if err != nil {
		return outcome{}, err
	}
	c.detail["name"], c.detail["replace"] = name, replace
	req := s.request(ipc.OpCreateView, "write")
	req.View = &ipc.View{Name: name, Select: sel, Description: desc, Replace: replace}
	if replace {
		return s.confirmed(c, "create_view", req, "", argsDigest("create_view", name, sel, desc), false)
	}
	return s.answer(c, req)
}

func (s *Server) appendEvent(ctx context.Context, c *call, a args) (outcome, error) {
	if err := a.only("content", "kind"); err != nil {
		return outcome{}, err
	}
	content, err := a.str("content", true, "")
	if err != nil {
		return outcome{}, err
	}
	c.setQuery(content)
	kind, err := a.str("kind", false, "note")
	if err != nil {
		return outcome{}, err
	}
	ev, err := s.store.Append(ctx, s.session, kind, content)
	if err != nil {
		return outcome{}, memoryError(err)
	}
	c.setRows(1)
	c.detail["event_id"], c.detail["kind"] = ev.ID, ev.Kind
	return outcome{text: fmt.Sprintf("ok: event %d appended (hash %s...)", ev.ID, ev.Hash[:12])}, nil
}

func (s *Server) verifyChain(ctx context.Context, c *call, a args) (outcome, error) {
	if err := a.only(); err != nil {
		return outcome{}, err
	}
	v, err := s.store.Verify(ctx)
	if err != nil {
		return outcome{}, memoryError(err)
	}
	c.setRows(v.Events)
	c.detail["chain_ok"] = v.OK
	return outcome{text: v.JSON()}, nil
}

func (s *Server) checkpoint(ctx context.Context, c *call, a args) (outcome, error) {
	if err := a.only("summary"); err != nil {
		return outcome{}, err
	}
	summary, err := a.str("summary", true, "")
	if err != nil {
		return outcome{}, err
	}
	c.setQuery(summary)
	cp, err := s.store.Checkpoint(ctx, s.session, summary)
	if err != nil {
		return outcome{}, memoryError(err)
	}
	c.setRows(1)
	c.detail["checkpoint_id"] = cp.ID
	return outcome{text: fmt.Sprintf("ok: checkpoint %d written at event %d", cp.ID, cp.LastEventID)}, nil
}

func (s *Server) resumeContext(ctx context.Context, c *call, a args) (outcome, error) {
	if err := a.only("max_events", "exclude_kinds", "query"); err != nil {
		return outcome{}, err
	}
	maxEvents, err := a.int("max_events", memory.DefaultMaxEvents, 1, maxResumeEvents, "")
	if err != nil {
		return outcome{}, err
	}
	exclude, err := a.list("exclude_kinds")
	if err != nil {
		return outcome{}, err
	}
	query, err := a.str("query", false, "")
	if err != nil {
		return outcome{}, err
	}
	if query != "" {
		c.setQuery(query)
	}
	r, err := s.store.ResumeContext(ctx, memory.ResumeOptions{
		MaxEvents: maxEvents, ExcludeKinds: exclude,
		MaxBytes: s.cfg.MaxResultBytes, MaxCellChars: s.cfg.MaxCellChars, Query: query,
	})
	if err != nil {
		return outcome{}, memoryError(err)
	}
	c.setRows(int64(r.Shown))
	c.detail["max_events"], c.detail["chain_ok"] = maxEvents, r.Chain.OK
	if len(r.Excluded) > 0 {
		c.detail["exclude_kinds"] = r.Excluded
	}
	if query != "" {
		c.detail["recall_matched"], c.detail["recalled"] = r.Matched, r.Recalled
	}
	return outcome{text: r.Text}, nil
}

// memoryError gives the memory layer's failures their codes.
func memoryError(err error) error {
	switch {
	case errors.Is(err, memory.ErrEmptyContent):
		return invalid("content must not be empty (white space alone is empty)")
	case errors.Is(err, memory.ErrEmptySummary):
		return invalid("summary must not be empty")
	case errors.Is(err, memory.ErrEmptyQuery):
		return invalid("query has no words to search for: pass words such as \"login cookie\", or leave query out")
	}
	if errors.Is(err, memory.ErrBusy) {
		return errcode.New(errcode.DatabaseUnavailable, "the database is busy; retry the call")
	}
	return errcode.New(errcode.DatabaseUnavailable, "the memory tables could not be read or written: "+err.Error())
}

func (s *Server) searchText(_ context.Context, c *call, a args) (outcome, error) {
	if err := a.only("pattern", "table", "columns", "where", "key_column", "limit", "ignore_case", "fixed_strings", "context_chars"); err != nil {
		return outcome{}, err
	}
	var sr ipc.Search
	var err error
	// A pattern of white space is a real search; only "" is empty.
	if sr.Pattern, err = a.str("pattern", false, ""); err != nil {
		return outcome{}, err
	}
	if sr.Pattern == "" {
		return outcome{}, invalid("pattern is required: pass a regular expression, or literal text with fixed_strings=true")
	}
	if sr.Table, err = a.str("table", true, ""); err != nil {
		return outcome{}, err
	}
	if sr.Columns, err = a.strs("columns"); err != nil {
		return outcome{}, err
	}
	if sr.Where, err = a.str("where", false, ""); err != nil {
		return outcome{}, err
	}
	if sr.KeyColumn, err = a.str("key_column", false, ""); err != nil {
		return outcome{}, err
	}
	if sr.Limit, err = a.int("limit", s.searchLimit(), 1, s.cfg.MaxRows, ""); err != nil {
		return outcome{}, err
	}
	if sr.IgnoreCase, err = a.bool("ignore_case", false); err != nil {
		return outcome{}, err
	}
	if sr.FixedStrings, err = a.bool("fixed_strings", false); err != nil {
		return outcome{}, err
	}
	if sr.ContextChars, err = a.int("context_chars", defaultContext, 0, maxContextChars, ""); err != nil {
		return outcome{}, err
	}
	sr.CandidateCap = s.cfg.SearchCandidates
	c.setQuery(sr.Pattern)
	c.detail["search"] = sr
	req := s.request(ipc.OpSearch, "read")
	req.Search = &sr
	return s.answer(c, req)
}
