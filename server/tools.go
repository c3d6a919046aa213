package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/config"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/memory"
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

// tool declares one MCP tool: what tools/list shows of it and the handler
// that answers it. The handler parses its arguments with the very params
// the schema is made from.
type tool struct {
	name, title string
	hints       hints
	desc        string
	params      params
	output      json.RawMessage // the readonly tools' structured output
	fn          toolFunc
	// worker: the tool runs a worker process (Prewake readies one as its
	// call comes in).
	worker bool
}

// mcpTool is the tool with its human title (top-level title of MCP
// 2025-06-18 and later, and annotations.title for older hosts), its hints
// with openWorldHint false (the tools touch one local file), and an input
// schema that admits no argument it does not list.
func (t tool) mcpTool() mcp.Tool {
	opts := []mcp.ToolOption{
		mcp.WithToolTitle(t.title),
		mcp.WithToolAnnotation(mcp.ToolAnnotation{
			Title:           t.title,
			ReadOnlyHint:    mcp.ToBoolPtr(t.hints.readOnly),
			DestructiveHint: mcp.ToBoolPtr(t.hints.destructive),
			IdempotentHint:  mcp.ToBoolPtr(t.hints.idempotent),
			OpenWorldHint:   mcp.ToBoolPtr(false),
		}),
		mcp.WithSchemaAdditionalProperties(false),
		mcp.WithDescription(t.desc),
	}
	opts = append(opts, t.params.schema()...)
	if t.output != nil {
		opts = append(opts, mcp.WithRawOutputSchema(t.output))
	}
	return mcp.NewTool(t.name, opts...)
}

// register offers tools; jsonTool marks the readonly profile's.
func (s *Server) register(tools []tool, jsonTool bool) {
	s.workerTools = map[string]bool{}
	for _, t := range tools {
		s.mcp.AddTool(t.mcpTool(), s.handle(t.name, jsonTool, t.fn))
		s.workerTools[t.name] = t.worker
	}
}

// prewake readies the standby worker that a tools/call will take, as the
// call comes in, if one of names (mcpstdio.Options.ToolCall) is a tool
// that runs a worker (see ipc.Spawner.Prewake).
func (s *Server) prewake(names []string) {
	if s.noPrewake {
		return
	}
	for _, n := range names {
		if s.workerTools[n] {
			s.spawner.Prewake()
			return
		}
	}
}

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

// searchLimit is search_text's default limit, within --max-rows.
func (s *Server) searchLimit() int { return min(searchDefaultLimit, s.cfg.MaxRows) }

func (s *Server) registerMemory() { s.register(s.memoryTools(), false) }

// memoryTools declares the memory profile's tools.
func (s *Server) memoryTools() []tool {
	c := s.cfg
	return []tool{
		{name: "read_query", worker: true, title: "Read query (SELECT)", hints: readsOnly, params: s.readQueryParams(), fn: s.readQuery,
			desc: fmt.Sprintf("Run ONE read-only SQL statement (SELECT, WITH ... SELECT, EXPLAIN, or an introspection PRAGMA such as table_info) and get CSV with a '# N rows' trailer. NULL is an empty field, the empty string is \"\". Page with limit (default %d, max %d) and offset; the trailer says when more rows exist. format=\"json\" returns {columns, rows, returnedRows, limit, offset, hasMore}. Writes are refused: use write_query or destructive_query.", c.DefaultLimit, c.MaxRows)},
		// UPDATE, REPLACE and upserts overwrite rows without a snapshot, so
		// write_query is destructive in the MCP sense, though it removes nothing.
		{name: "write_query", worker: true, title: "Write query (INSERT, UPDATE, CREATE)", hints: hints{destructive: true}, params: writeQueryParams, fn: s.writeQuery,
			desc: fmt.Sprintf("Run ONE INSERT, UPDATE, upsert, REPLACE, CREATE TABLE, CREATE INDEX or CREATE VIRTUAL TABLE (fts5, rtree). Answers 'ok: N rows affected (last_insert_rowid=K)' or 'ok: schema statement executed'; RETURNING rows follow as CSV. An UPDATE changing more than %d rows is rolled back. DELETE, DROP, ALTER and triggers need destructive_query; views need create_view.%s", c.MaxUpdateRows, s.asksText("write_query"))},
		// Not idempotent: every call takes a new snapshot, and a repeated
		// statement may remove or change more.
		{name: "destructive_query", worker: true, title: "Destructive query (snapshot first)", hints: hints{destructive: true}, params: destructiveQueryParams, fn: s.destructiveQuery,
			desc: "Run ONE DELETE, DROP (table, view, index, trigger), ALTER TABLE, CREATE/DROP TRIGGER or bulk UPDATE. The statement is checked first, then snapshotted (a copy of the database, or for a large one an undo record of exactly what the statement changes), then it runs; the answer names the snapshot file. reason is required and logged. The server's own tables can never be changed." + s.asksText("destructive_query")},
		{name: "list_tables", worker: true, title: "List tables and views", hints: readsOnly, params: listTablesParams, fn: s.listTables,
			desc: "List tables and views as CSV name,type,system,rows. system=1 marks the server's own tables (memory log, audit log), which are readable but cannot be changed."},
		{name: "describe_table", worker: true, title: "Describe a table or view", hints: readsOnly, params: s.describeTableParams(), fn: s.describeTable,
			desc: "Describe a table or view: CSV sections '# columns' (cid,name,type,notnull,default,pk), '# foreign_keys' (from,to_table,to_column) and '# indexes' (name,unique,origin,columns)."},
		{name: "get_schema", worker: true, title: "Show the schema", hints: readsOnly, params: getSchemaParams, fn: s.getSchema,
			desc: "Every CREATE statement as stored (tables, indexes, views, triggers). Views saved with create_view carry a '-- description:' line: they are reusable queries from earlier sessions."},
		// replace=true overwrites a view's definition (the old SQL is kept in
		// the audit log): destructive. Repeating a call changes nothing more:
		// the view is the same, or the second call is refused.
		{name: "create_view", worker: true, title: "Save a query as a view", hints: hints{destructive: true, idempotent: true}, params: createViewParams, fn: s.createView,
			desc: "Save a SELECT as a named view with a description, so later sessions find it in get_schema and can query it by name. The SELECT is checked as read-only first." + s.asksText("create_view")},
		{name: "append_event", title: "Append a memory event", hints: onlyAdds, params: appendEventParams, fn: s.appendEvent,
			desc: "Append a note, decision or finding to the append-only, hash-chained memory log. The server computes the hash; events can never be edited or deleted."},
		// Not destructive: it only adds a file beside the database (rotation
		// removes old snapshots, never data). Not idempotent: every call adds
		// one.
		{name: "snapshot", worker: true, title: "Snapshot the database", hints: onlyAdds, params: snapshotParams, fn: s.snapshotTool,
			desc: "Write a full copy of the database file now, with the same online backup, naming and rotation as destructive_query's snapshots (the newest --snapshots are kept in the snapshot folder). Answers 'ok: snapshot written: PATH', or 'ok: snapshot skipped (disabled or target unavailable)' when snapshots are off or the folder cannot be written; it never fails for that. reason is kept in the audit log."},
		{name: "verify_chain", title: "Verify the memory chain", hints: readsOnly, params: noParams, fn: s.verifyChain,
			desc: "Recompute the whole memory chain. Answers {\"ok\": true, \"events\": N, \"head_id\": N, \"head_hash\": ...}, or the first broken event id and why."},
		{name: "checkpoint", title: "Write a checkpoint", hints: onlyAdds, params: checkpointParams, fn: s.checkpoint,
			desc: "Store a summary of the current state, anchored to the latest event; get_resume_context shows it first in the next session."},
		{name: "get_resume_context", title: "Resume context (call first)", hints: readsOnly, params: resumeContextParams, fn: s.resumeContext,
			desc: "Call this FIRST in a new session or after a context compaction: the latest checkpoint, the events since it (CSV id,ts,kind,content, oldest first; when they overflow the byte cap the oldest are dropped, never the newest, and a line says how many) and whether the memory chain verifies. exclude_kinds hides kinds such as hook-written raw events. With query, also the older events most relevant to it (ranked by bm25 over stemmed words and identifier parts) in a section of their own with a score column, narrowed by since, until, kinds and agent as in the recall tool."},
		{name: "recall", title: "Recall memory by meaning", hints: readsOnly, params: s.recallParams(), fn: s.recall,
			desc: "Find earlier events and checkpoints by what they are about, best first: CSV id,ts,kind,agent,score,snippet and a trailer saying how they were ranked. Words are matched stemmed (configs finds config) and identifiers by their parts (\"parse config\" finds parseConfig, cache_key finds \"cache key\"); more and rarer words rank higher. Narrow with since/until (2026-01-05, 2026-01-05T09:30:00Z, or 7d, 12h back from now), kinds and agent. A checkpoint's id reads c7 (memory_checkpoints.id 7). Use get_resume_context for the latest state, search_text for exact substrings or regular expressions."},
		{name: "search_text", worker: true, title: "Search text in a table", hints: readsOnly, params: s.searchTextParams(), fn: s.searchText,
			desc: fmt.Sprintf("Find text inside a table or view: SQL narrows the rows (where, at most %d candidates), then a regular expression (RE2 syntax) matches the chosen text columns. Answers CSV key,column,snippet plus totals.", c.SearchCandidates)},
	}
}

// The arguments of each tool, in the order tools/list shows them and the
// handler checks them. Those that depend on the configuration are methods.
var (
	noParams         = params{}
	writeQueryParams = params{
		{name: "query", kind: text, required: true, query: true, desc: "one writing SQL statement"},
	}
	destructiveQueryParams = params{
		{name: "query", kind: text, required: true, query: true, desc: "one destructive SQL statement"},
		{name: "reason", kind: text, required: true, desc: "why this change is needed (kept in the audit log)",
			missing: "reason is required: say in a sentence why this destructive change is needed"},
	}
	listTablesParams = params{
		{name: "include_row_counts", kind: boolean, def: true, desc: "count the rows of each table"},
	}
	getSchemaParams = params{
		{name: "include_system", kind: boolean, def: false, desc: "also show the server's own objects"},
	}
	createViewParams = params{
		{name: "name", kind: text, required: true, pattern: regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`),
			shape: "letters, digits, underscores; not starting with a digit",
			desc:  "view name: letters, digits, underscores, not starting with a digit"},
		{name: "select_sql", kind: text, required: true, query: true, desc: "one SELECT or WITH ... SELECT statement"},
		{name: "description", kind: text, def: "", desc: "what the view answers; stored inside its SQL"},
		{name: "replace", kind: boolean, def: false, desc: "replace an existing view (its previous SQL is kept in the audit log)"},
	}
	appendEventParams = params{
		{name: "content", kind: text, required: true, query: true, desc: "the event text"},
		{name: "kind", kind: text, def: "note", desc: "a short category such as note, decision, finding, todo"},
	}
	snapshotParams = params{
		{name: "reason", kind: text, def: "manual", desc: "why the snapshot is taken, e.g. \"before a refactor\" (kept in the audit log)"},
	}
	checkpointParams = params{
		{name: "summary", kind: text, required: true, query: true, desc: "what a fresh session needs to know to carry on"},
	}
	resumeContextParams = params{
		{name: "max_events", kind: integer, min: 1, max: maxResumeEvents, def: memory.DefaultMaxEvents, desc: "most recent events to show"},
		{name: "exclude_kinds", kind: textList, def: "", desc: "event kinds to leave out: an array, or one comma-separated string such as \"prompt,compaction\""},
		{name: "query", kind: text, def: "", desc: `words to recall older events by, e.g. "login cookie" (any word matches, more and rarer words rank higher; "a phrase" and prefix* work)`},
		{name: "since", kind: text, def: "", desc: "with query: recall only events from this time on: an ISO 8601 date or time, or a duration back from now such as 7d or 12h"},
		{name: "until", kind: text, def: "", desc: "with query: recall only events before this time (a date includes its day): an ISO 8601 date or time, or a duration back from now"},
		{name: "kinds", kind: textList, def: "", desc: "with query: recall only events of these kinds: an array, or one comma-separated string"},
		{name: "agent", kind: text, def: "", desc: "with query: recall only events written by this HTTP agent (token name)"},
	}
)

// recallParams: the recall tool's arguments, limit within --max-rows.
func (s *Server) recallParams() params {
	return params{
		{name: "query", kind: text, required: true, query: true, desc: `what to recall, in words, e.g. "database choice" or "parseConfig panic" (any word matches; "a phrase" and prefix* work)`},
		{name: "limit", kind: integer, min: 1, max: min(s.cfg.MaxRows, maxResumeEvents), def: min(memory.DefaultRecallLimit, s.cfg.MaxRows), desc: "events and checkpoints to return, best first"},
		{name: "since", kind: text, def: "", desc: "only what was written from this time on: an ISO 8601 date or time (2026-01-05, 2026-01-05T09:30:00Z) or a duration back from now (7d, 12h, 2w, 90m)"},
		{name: "until", kind: text, def: "", desc: "only what was written before this time (a date includes its whole day): an ISO 8601 date or time, or a duration back from now"},
		{name: "kinds", kind: textList, def: "", desc: "only these kinds (\"checkpoint\" for checkpoint summaries): an array, or one comma-separated string such as \"decision,bug\""},
		{name: "agent", kind: text, def: "", desc: "only what this HTTP agent (token name) wrote"},
	}
}

// recallTimes parses since and until (memory.ParseRecallTime), refusing
// a bad one as INVALID_ARGUMENT and an empty range.
func recallTimes(since, until string) (from, to time.Time, err error) {
	now := time.Now()
	if from, err = memory.ParseRecallTime(since, now, false); err != nil {
		return from, to, invalid("since: %v", err)
	}
	if to, err = memory.ParseRecallTime(until, now, true); err != nil {
		return from, to, invalid("until: %v", err)
	}
	if !from.IsZero() && !to.IsZero() && !from.Before(to) {
		return from, to, invalid("since (%s) is not before until (%s): nothing can match; widen the range", from.Format(memory.TimeLayout), to.Format(memory.TimeLayout))
	}
	return from, to, nil
}

func (s *Server) recall(ctx context.Context, c *call, a args) (outcome, error) {
	v, err := s.recallParams().parse(a, c)
	if err != nil {
		return outcome{}, err
	}
	since, until, err := recallTimes(v.str("since"), v.str("until"))
	if err != nil {
		return outcome{}, err
	}
	opt := memory.RecallOptions{
		Query: v.str("query"), Limit: v.int("limit"), Since: since, Until: until, Kinds: v.strs("kinds"), Agent: strings.TrimSpace(v.str("agent")),
		MaxBytes: s.cfg.MaxResultBytes, MaxCellChars: s.cfg.MaxCellChars, Timeout: s.cfg.QueryTimeout,
	}
	c.detail["limit"] = opt.Limit
	for k, val := range map[string]string{"since": v.str("since"), "until": v.str("until"), "agent": opt.Agent} {
		if val != "" {
			c.detail[k] = val
		}
	}
	if err := s.caughtUp(ctx); err != nil {
		return outcome{}, err
	}
	store, release, err := s.memoryReader(ctx)
	if err != nil {
		return outcome{}, err
	}
	defer release()
	r, err := store.Recall(ctx, opt)
	if err != nil {
		return outcome{}, memoryError(err)
	}
	if len(r.Kinds) > 0 {
		c.detail["kinds"] = r.Kinds
	}
	c.setRows(int64(r.Shown))
	c.detail["recall_matched"] = r.Matched
	return outcome{text: r.Text}, nil
}

func (s *Server) readQueryParams() params {
	return params{
		{name: "query", kind: text, required: true, query: true, desc: "one SELECT / WITH / EXPLAIN / introspection PRAGMA statement"},
		{name: "limit", kind: integer, min: 1, max: s.cfg.MaxRows, def: s.cfg.DefaultLimit, hint: s.limitHint(), desc: "rows to return"},
		{name: "offset", kind: integer, min: 0, max: maxOffset, def: 0, desc: "rows to skip first"},
		{name: "format", kind: text, enum: []string{"csv", "json"}, def: "csv", desc: "csv, or json for {columns, rows, ...}"},
	}
}

// describeTableParams: both profiles offer describe_table, each with its
// own words.
func (s *Server) describeTableParams() params {
	desc := "table or view name"
	if s.cfg.Profile == config.ProfileReadonly {
		desc = "table name from list_tables"
	}
	return params{{name: "table", kind: text, required: true, query: true, desc: desc}}
}

func (s *Server) searchTextParams() params {
	return params{
		// A pattern of white space is a real search; only "" is empty.
		{name: "pattern", kind: text, required: true, blankOK: true, desc: "regular expression (RE2), or literal text with fixed_strings=true",
			missing: "pattern is required: pass a regular expression, or literal text with fixed_strings=true"},
		{name: "table", kind: text, required: true, desc: "table or view to search"},
		{name: "columns", kind: textList, nullable: true, desc: "columns to search (default: the text columns): an array, or one comma-separated string such as \"title,body\""},
		{name: "where", kind: text, nullable: true, desc: "SQL condition that narrows the candidate rows, e.g. kind = 'note'"},
		{name: "key_column", kind: text, nullable: true, desc: "column that identifies a row in the output (default rowid; required for views)"},
		{name: "limit", kind: integer, min: 1, max: s.cfg.MaxRows, def: s.searchLimit(), desc: "matching values to return"},
		{name: "ignore_case", kind: boolean, def: false, desc: "case-insensitive match"},
		{name: "fixed_strings", kind: boolean, def: false, desc: "treat pattern as literal text"},
		{name: "context_chars", kind: integer, min: 0, max: maxContextChars, def: defaultContext, desc: "characters of context on each side of the match"},
	}
}

func (s *Server) limitHint() string {
	return fmt.Sprintf("page with offset to see more than %d rows", s.cfg.MaxRows)
}

func (s *Server) readQuery(_ context.Context, c *call, a args) (outcome, error) {
	v, err := s.readQueryParams().parse(a, c)
	if err != nil {
		return outcome{}, err
	}
	limit, offset, format := v.int("limit"), v.int("offset"), v.str("format")
	c.detail["limit"], c.detail["offset"], c.detail["format"] = limit, offset, format
	req := s.request(ipc.OpQuery, ipc.ModeRead)
	req.SQL, req.Limit, req.Offset, req.Format = v.str("query"), limit, offset, ipc.Format(format)
	return s.answer(c, req)
}

func (s *Server) writeQuery(_ context.Context, c *call, a args) (outcome, error) {
	v, err := writeQueryParams.parse(a, c)
	if err != nil {
		return outcome{}, err
	}
	q := v.str("query")
	c.detail["max_update_rows"] = s.cfg.MaxUpdateRows
	req := s.request(ipc.OpQuery, ipc.ModeWrite)
	req.SQL = q
	return s.confirmed(c, "write_query", req, "", argsDigest("write_query", q), true)
}

func (s *Server) destructiveQuery(_ context.Context, c *call, a args) (outcome, error) {
	v, err := destructiveQueryParams.parse(a, c)
	if err != nil {
		return outcome{}, err
	}
	q, reason := v.str("query"), v.str("reason")
	c.detail["reason"] = reason
	req := s.request(ipc.OpQuery, ipc.ModeDestructive)
	req.SQL = q
	req.Snapshot = &ipc.Snapshot{Dir: s.cfg.SnapshotDir, Stem: config.Stem(s.dbPath), Keep: s.cfg.Snapshots,
		Mode: s.cfg.SnapshotMode, FullMB: s.cfg.SnapshotFullMB, Reason: reason}
	return s.confirmed(c, "destructive_query", req, reason, argsDigest("destructive_query", q, reason), true)
}

func (s *Server) listTables(_ context.Context, c *call, a args) (outcome, error) {
	v, err := listTablesParams.parse(a, c)
	if err != nil {
		return outcome{}, err
	}
	req := s.request(ipc.OpListTables, ipc.ModeRead)
	req.Table = &ipc.Table{RowCounts: v.bool("include_row_counts")}
	return s.answer(c, req)
}

func (s *Server) describeTable(_ context.Context, c *call, a args) (outcome, error) {
	v, err := s.describeTableParams().parse(a, c)
	if err != nil {
		return outcome{}, err
	}
	// The readonly profile answers its own JSON shape under its policy.
	readonly := s.cfg.Profile == config.ProfileReadonly
	mode := ipc.ModeRead
	if readonly {
		mode = ipc.ModeSelect
	}
	req := s.request(ipc.OpDescribeTable, mode)
	req.Table = &ipc.Table{Name: v.str("table"), JSON: readonly}
	return s.answer(c, req)
}

func (s *Server) getSchema(_ context.Context, c *call, a args) (outcome, error) {
	v, err := getSchemaParams.parse(a, c)
	if err != nil {
		return outcome{}, err
	}
	req := s.request(ipc.OpSchema, ipc.ModeRead)
	req.Table = &ipc.Table{IncludeSystem: v.bool("include_system")}
	return s.answer(c, req)
}

func (s *Server) createView(_ context.Context, c *call, a args) (outcome, error) {
	v, err := createViewParams.parse(a, c)
	if err != nil {
		return outcome{}, err
	}
	name, sel, desc, replace := v.str("name"), v.str("select_sql"), v.str("description"), v.bool("replace")
	c.detail["name"], c.detail["replace"] = name, replace
	req := s.request(ipc.OpCreateView, ipc.ModeWrite)
	req.View = &ipc.View{Name: name, Select: sel, Description: desc, Replace: replace}
	if replace {
		return s.confirmed(c, "create_view", req, "", argsDigest("create_view", name, sel, desc), false)
	}
	return s.answer(c, req)
}

func (s *Server) appendEvent(ctx context.Context, c *call, a args) (outcome, error) {
	v, err := appendEventParams.parse(a, c)
	if err != nil {
		return outcome{}, err
	}
	var ev memory.Event
	if s.cluster != nil {
		ev, err = s.clusterAppend(c, s.sessionOf(AgentFrom(ctx)), v.str("kind"), v.str("content"))
	} else if ev, err = s.store.Append(ctx, s.sessionOf(AgentFrom(ctx)), v.str("kind"), v.str("content")); err != nil {
		err = memoryError(err)
	}
	if err != nil {
		return outcome{}, err
	}
	c.setRows(1)
	c.detail["event_id"], c.detail["kind"] = ev.ID, ev.Kind
	return outcome{text: fmt.Sprintf("ok: event %d appended (hash %s...)", ev.ID, ev.Hash[:12])}, nil
}

func (s *Server) verifyChain(ctx context.Context, c *call, a args) (outcome, error) {
	if _, err := noParams.parse(a, c); err != nil {
		return outcome{}, err
	}
	if err := s.caughtUp(ctx); err != nil {
		return outcome{}, err
	}
	store, release, err := s.memoryReader(ctx)
	if err != nil {
		return outcome{}, err
	}
	defer release()
	v, err := store.Verify(ctx)
	if err != nil {
		return outcome{}, memoryError(err)
	}
	c.setRows(v.Events)
	c.detail["chain_ok"] = v.OK
	return outcome{text: v.JSON()}, nil
}

func (s *Server) checkpoint(ctx context.Context, c *call, a args) (outcome, error) {
	v, err := checkpointParams.parse(a, c)
	if err != nil {
		return outcome{}, err
	}
	var cp memory.Checkpoint
	if s.cluster != nil {
		cp, err = s.clusterCheckpoint(c, s.sessionOf(AgentFrom(ctx)), v.str("summary"))
	} else if cp, err = s.store.Checkpoint(ctx, s.sessionOf(AgentFrom(ctx)), v.str("summary")); err != nil {
		err = memoryError(err)
	}
	if err != nil {
		return outcome{}, err
	}
	c.setRows(1)
	c.detail["checkpoint_id"] = cp.ID
	return outcome{text: fmt.Sprintf("ok: checkpoint %d written at event %d", cp.ID, cp.LastEventID)}, nil
}

func (s *Server) resumeContext(ctx context.Context, c *call, a args) (outcome, error) {
	v, err := resumeContextParams.parse(a, c)
	if err != nil {
		return outcome{}, err
	}
	maxEvents, exclude, query := v.int("max_events"), v.strs("exclude_kinds"), v.str("query")
	if query != "" {
		c.setQuery(query)
	}
	since, until, err := recallTimes(v.str("since"), v.str("until"))
	if err != nil {
		return outcome{}, err
	}
	kinds, agent := v.strs("kinds"), strings.TrimSpace(v.str("agent"))
	if query == "" && (!since.IsZero() || !until.IsZero() || len(kinds) > 0 || agent != "") {
		return outcome{}, invalid("since, until, kinds and agent narrow the recall of older events: pass query too (or use the recall tool)")
	}
	if err := s.caughtUp(ctx); err != nil {
		return outcome{}, err
	}
	store, release, err := s.memoryReader(ctx)
	if err != nil {
		return outcome{}, err
	}
	defer release()
	r, err := store.ResumeContext(ctx, memory.ResumeOptions{
		MaxEvents: maxEvents, ExcludeKinds: exclude,
		MaxBytes: s.cfg.MaxResultBytes, MaxCellChars: s.cfg.MaxCellChars, Query: query,
		RecallTimeout: s.cfg.QueryTimeout,
		Since:         since, Until: until, Kinds: kinds, Agent: agent,
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
	case errors.Is(err, memory.ErrNoRecallIndex):
		return errcode.New(errcode.DatabaseUnavailable, err.Error()+"; search with search_text instead")
	case errors.Is(err, memory.ErrTooManyTerms):
		return invalid("%v: recall searches for at most %d words (a phrase's words each count); keep the few that matter most", err, memory.MaxRecallTerms)
	}
	var timeout *memory.RecallTimeoutError
	if errors.As(err, &timeout) {
		return errcode.New(errcode.Timeout, fmt.Sprintf("recall stopped after %s (interrupted): use fewer or longer prefix terms (a short prefix such as w* reads every indexed word it starts), or raise --query-timeout", errcode.Duration(timeout.Budget)))
	}
	if errors.Is(err, memory.ErrBusy) {
		return errcode.New(errcode.DatabaseUnavailable, "the database is busy; retry the call")
	}
	return errcode.New(errcode.DatabaseUnavailable, "the memory tables could not be read or written: "+err.Error())
}

func (s *Server) searchText(_ context.Context, c *call, a args) (outcome, error) {
	v, err := s.searchTextParams().parse(a, c)
	if err != nil {
		return outcome{}, err
	}
	sr := ipc.Search{
		Pattern: v.str("pattern"), Table: v.str("table"), Columns: v.strs("columns"),
		Where: v.str("where"), KeyColumn: v.str("key_column"), Limit: v.int("limit"),
		IgnoreCase: v.bool("ignore_case"), FixedStrings: v.bool("fixed_strings"), ContextChars: v.int("context_chars"),
		CandidateCap: s.cfg.SearchCandidates,
	}
	c.setQuery(sr.Pattern)
	c.detail["search"] = sr
	req := s.request(ipc.OpSearch, ipc.ModeRead)
	req.Search = &sr
	return s.answer(c, req)
}
