package policy

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

// Mode is the policy profile of one tool.
type Mode int

const (
	// Select is the read-only profile's query_database: SELECT and
	// WITH ... SELECT only, no PRAGMA statement.
	Select Mode = iota
	// Read is read_query, search_text and the list/describe/schema tools:
	// SELECT plus introspection PRAGMAs and reads of settings.
	Read
	// Write is write_query: Read plus INSERT, UPDATE, CREATE TABLE/INDEX,
	// REINDEX, ANALYZE and CREATE VIRTUAL TABLE (fts5, rtree).
	Write
	// Destructive is destructive_query: Write plus DELETE, DROP, ALTER TABLE
	// and CREATE TRIGGER.
	Destructive
)

var (
	modeNames = [...]string{"select", "read", "write", "destructive"}
	modeTools = [...]string{"query_database", "read_query", "write_query", "destructive_query"}
)

// String returns the name ParseMode accepts.
func (m Mode) String() string {
	if m < Select || m > Destructive {
		return fmt.Sprintf("Mode(%d)", int(m))
	}
	return modeNames[m]
}

// Tool returns the MCP tool that runs statements in this mode.
func (m Mode) Tool() string {
	if m < Select || m > Destructive {
		return m.String()
	}
	return modeTools[m]
}

// ParseMode parses "select", "read", "write" or "destructive".
func ParseMode(s string) (Mode, error) {
	for i, n := range modeNames {
		if s == n {
			return Mode(i), nil
		}
	}
	return 0, fmt.Errorf("policy: unknown mode %q (want select, read, write or destructive)", s)
}

// The server's own objects, by name as in sqlite_schema: the one list of
// them. Package memory creates them under these names; the worker, restore
// and the person's view tell them from the agent's through [IsProtected]
// and [IsServerObject].
const (
	TableEvents      = "memory_events"
	TableCheckpoints = "memory_checkpoints"
	TableQueryLog    = "query_log"
	ViewQueryErrors  = "query_errors"
	IndexEvents      = "memory_events_fts"
	IndexCheckpoints = "memory_checkpoints_fts"
	// IndexRecall is the recall index: contentless FTS5, stemmed, with
	// identifier parts, over events and checkpoint summaries (issue 47).
	IndexRecall = "memory_recall"
	// TableVectors holds an embedding vector per event and checkpoint
	// summary when the server runs with --embedding-model (issue 47).
	TableVectors = "memory_vectors"
	// TableClusterGuard and IndexChainGuard exist only in a cluster (SPEC
	// 13, package memory's ClusterSchema): one row per guard (schema
	// version, rows changed, row stored) whose CHECK fails the whole
	// request, and the UNIQUE index on memory_events(prev_hash) that keeps
	// two fronts from appending on the same head.
	TableClusterGuard = "memory_cluster_guard"
	IndexChainGuard   = "memory_events_prev_hash"
)

// ProtectedTables are the server's own objects (query_errors is a view):
// readable, never changed through SQL tools.
var ProtectedTables = [...]string{TableEvents, TableCheckpoints, TableQueryLog, ViewQueryErrors, TableVectors, TableClusterGuard, IndexChainGuard}

// ServerIndexes are the server's full-text indexes of the memory (FTS5
// tables with external content, and the contentless recall index, SPEC
// 5.4): readable with MATCH, bm25(),
// snippet() and highlight(), never written through SQL tools, FTS
// commands included (an FTS command is an INSERT into the table).
var ServerIndexes = [...]string{IndexEvents, IndexCheckpoints, IndexRecall}

// fts5Shadows are the suffixes of an FTS5 table's shadow tables.
var fts5Shadows = [...]string{"_data", "_idx", "_docsize", "_config", "_content"}

// IsProtected reports whether name is one of ProtectedTables, a server
// index or one of its shadow tables, compared as SQLite compares names
// (see [rawsqlite.SameName]).
func IsProtected(name string) bool {
	for _, p := range ProtectedTables {
		if rawsqlite.SameName(name, p) {
			return true
		}
	}
	return IsServerIndex(name) != ""
}

// IsHidden reports whether list_tables leaves name out: a server index
// or its shadow table, the vector table (read by recall, not by agents;
// the connect-time instructions name the recall index), or a cluster's
// guard table.
func IsHidden(name string) bool {
	return IsServerIndex(name) != "" || rawsqlite.SameName(name, TableVectors) || rawsqlite.SameName(name, TableClusterGuard)
}

// IsServerIndex returns the server index that name is, or whose shadow
// table it is, or "".
func IsServerIndex(name string) string {
	for _, p := range ServerIndexes {
		if len(name) < len(p) || !rawsqlite.SameName(name[:len(p)], p) {
			continue
		}
		rest := name[len(p):]
		if rest == "" {
			return p
		}
		for _, suffix := range fts5Shadows {
			if rawsqlite.SameName(rest, suffix) {
				return p
			}
		}
	}
	return ""
}

// ViewSQL is the statement create_view stores: the description lives in the
// view's own SQL, so get_schema shows it to the next session.
func ViewSQL(name, description, selectSQL string) string {
	var b strings.Builder
	b.WriteString("CREATE VIEW " + rawsqlite.QuoteIdent(name) + " AS\n")
	if d := strings.Join(strings.Fields(description), " "); d != "" {
		b.WriteString("-- description: " + d + "\n")
	}
	b.WriteString(selectSQL)
	return b.String()
}

// ValidViewName reports whether name has the shape create_view accepts:
// ^[A-Za-z_][A-Za-z0-9_]*$. Checked by hand: a regexp compiled at package
// init would cost every worker start, and most workers never see a view.
func ValidViewName(name string) bool {
	if name == "" || (name[0] >= '0' && name[0] <= '9') {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// IsServerObject reports whether the schema entry name (of table tbl, its
// sqlite_schema tbl_name) belongs to the server rather than the agent: a
// protected table or view, an index or trigger on one, or a Litestream
// table (see [IsReplicationTable]). get_schema hides these and restore
// keeps them as they are. Shadow tables of a server virtual table are the
// caller's to add: only the schema knows which virtual tables own them.
func IsServerObject(name, tbl string) bool {
	return IsProtected(name) || IsProtected(tbl) || IsReplicationTable(tbl)
}

// Options refine a mode.
type Options struct {
	// ShadowTables names the FTS5 and R*Tree shadow tables in the database
	// (the worker fills it from pragma_table_list where type='shadow').
	// Writes to them are the virtual tables' own upkeep and are allowed.
	ShadowTables map[string]bool
	// CreateView names the one view the statement may create, or drop to
	// replace it: create_view's own CREATE VIEW. Empty for agent statements.
	CreateView string
}

// Call is one authorizer callback: Action (an Action* constant) on Arg1
// and Arg2 in database DB, from inside trigger or view Trigger ("" at top
// level). NULL arguments arrive as "".
type Call struct {
	Action      int
	Arg1, Arg2  string
	DB, Trigger string
	// Arg2Null tells a NULL Arg2 from an empty one. SQLite reports
	// PRAGMA x with NULL and PRAGMA x = '' with "", and only the first is a
	// read. A caller that cannot tell leaves it false: an empty value then
	// counts as a value, so the mistake refuses a read instead of allowing
	// a write.
	Arg2Null bool
	// Nested marks an action of a statement that a virtual-table module
	// prepares while another statement compiles (its xConnect): R*Tree
	// prepares INSERT and DELETE statements on its shadow tables that way,
	// even when the statement naming the table is a SELECT. Those
	// statements run only when the statement being compiled writes the
	// virtual table, which is judged on its own.
	Nested bool
}

// Summary is what the statement does at top level (outside trigger bodies),
// ignoring SQLite's and virtual tables' bookkeeping.
type Summary struct {
	Inserts bool
	Updates bool
	Deletes bool
	Schema  bool // DDL, REINDEX or ANALYZE
}

// PureUpdate reports an UPDATE that is not an upsert and not DDL: the
// statements the rowcount guard applies to.
func (s Summary) PureUpdate() bool { return s.Updates && !s.Inserts && !s.Schema }

// Writes reports whether the statement changes anything.
func (s Summary) Writes() bool { return s.Inserts || s.Updates || s.Deletes || s.Schema }

// Authorizer is the authorizer callback for one mode. It is safe for
// concurrent use; compile one statement between Resets.
type Authorizer struct {
	mode       Mode
	shadow     map[string]bool // lower-case names
	createView string

	mu         sync.Mutex
	violation  *errcode.Error
	summary    Summary
	selectSeen bool              // the statement is a SELECT (or runs one) before any PRAGMA
	ddlSeen    bool              // an allowed DDL action came first, so SQLite's table upkeep follows
	newShadow  map[string]bool   // shadow tables of a virtual table this statement creates
	inserts    map[string]string // tables the statement or its triggers insert into, by folded name
}

// New returns an Authorizer for mode.
func New(mode Mode, opts Options) *Authorizer {
	a := &Authorizer{mode: mode, shadow: make(map[string]bool), createView: opts.CreateView}
	for n, ok := range opts.ShadowTables {
		if ok {
			a.shadow[rawsqlite.FoldName(n)] = true
		}
	}
	return a
}

// Reset forgets the previous statement: its violation, summary and state.
func (a *Authorizer) Reset() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.violation = nil
	a.summary = Summary{}
	a.selectSeen = false
	a.ddlSeen = false
	a.newShadow = nil
	a.inserts = nil
}

// Violation returns the first refusal since New or Reset, or nil.
func (a *Authorizer) Violation() *errcode.Error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.violation
}

// Summary returns what the statement does at top level. Read it after
// prepare and before the first step: FTS5 and R*Tree report their own
// internal statements while the statement runs.
func (a *Authorizer) Summary() Summary {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.summary
}

// InsertTargets lists the tables the statement inserts into, its trigger
// bodies included, as SQLite named them, sorted. Read it after prepare:
// the caller checks INSERTs into FTS tables with [CheckFTSCommands].
func (a *Authorizer) InsertTargets() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]string, 0, len(a.inserts))
	for _, n := range a.inserts {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Authorize is SQLite's authorizer callback: it returns OK or Deny for one
// action and records the first refusal.
func (a *Authorizer) Authorize(c Call) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	var v *errcode.Error
	if c.Nested {
		v = a.nested(c)
	} else {
		v = a.decide(c)
	}
	if v != nil {
		if a.violation == nil {
			a.violation = v
		}
		return Deny
	}
	if c.Nested {
		return OK
	}
	if c.Action == ActionInsert {
		if a.inserts == nil {
			a.inserts = make(map[string]string)
		}
		a.inserts[rawsqlite.FoldName(c.Arg1)] = c.Arg1
	}
	if c.Trigger == "" {
		a.note(c.Action, c.Arg1)
	}
	return OK
}

// nested judges an action of a statement a virtual-table module prepares
// while connecting. Its writes to the module's shadow tables are allowed in
// every mode: such statements only run when the statement being compiled
// writes the virtual table, and that write is judged as the agent's.
// Everything else is judged as usual, without touching the statement's own
// state (summary, SELECT seen, insert targets).
func (a *Authorizer) nested(c Call) *errcode.Error {
	switch c.Action {
	case ActionInsert, ActionUpdate, ActionDelete:
		if v := a.database(c.Action, c.Arg1, c.DB); v != nil {
			return v
		}
		if !IsProtected(c.Arg1) && !hasSQLitePrefix(c.Arg1) && hasShadowSuffix(c.Arg1) {
			return nil
		}
	case ActionPragma:
		// A module's PRAGMA is no PRAGMA statement of the agent's.
		saved := a.selectSeen
		a.selectSeen = true
		defer func() { a.selectSeen = saved }()
	case ActionSelect:
		return nil
	}
	saved := a.summary
	defer func() { a.summary = saved }()
	return a.decide(c)
}

// deniedFunctions load native code or touch files outside the database.
// Only load_extension exists in modernc's build (and is disabled); the
// others are listed in case a build adds them.
var deniedFunctions = map[string]string{
	"load_extension": "it loads native code",
	"fts3_tokenizer": "it can register native code",
	"readfile":       "it reads files outside the database",
	"writefile":      "it writes files outside the database",
	"edit":           "it runs an editor",
}

// vtabModules are the virtual table modules write_query may create, with
// the suffixes of the shadow tables each creates.
var vtabModules = map[string][]string{
	"fts5":  {"_data", "_idx", "_content", "_docsize", "_config"},
	"rtree": {"_node", "_rowid", "_parent"},
}

// hasShadowSuffix reports a name ending like a shadow table of one of
// vtabModules (geopoly, compiled in as well, uses R*Tree's).
func hasShadowSuffix(name string) bool {
	n := rawsqlite.FoldName(name)
	for _, suffixes := range vtabModules {
		for _, s := range suffixes {
			if len(n) > len(s) && strings.HasSuffix(n, s) {
				return true
			}
		}
	}
	return false
}

func (a *Authorizer) decide(c Call) *errcode.Error {
	action, arg1, arg2, dbName, trigger := c.Action, c.Arg1, c.Arg2, c.DB, c.Trigger
	switch action {
	case ActionSelect:
		a.selectSeen = true
		return nil
	case ActionRead:
		if rawsqlite.SameName(arg1, "sqlite_dbpage") {
			return a.policy("reading sqlite_dbpage is not allowed in any tool: it returns raw database pages, including free pages that still hold deleted rows")
		}
		return nil
	case ActionRecursive:
		return nil
	case ActionFunction:
		if why, bad := deniedFunctions[rawsqlite.FoldName(arg2)]; bad {
			return a.policy(fmt.Sprintf("%s() is not allowed in any tool: %s", arg2, why))
		}
		return nil
	case ActionPragma:
		return a.pragma(arg1, arg2, c.Arg2Null)
	case ActionInsert, ActionUpdate, ActionDelete:
		if v := a.database(action, arg1, dbName); v != nil {
			return v
		}
		return a.write(action, arg1, trigger)
	case ActionAttach:
		return a.policy("ATTACH is not allowed in any tool (VACUUM and VACUUM INTO are refused the same way: SQLite attaches a database to run them)")
	case ActionDetach:
		return a.policy("DETACH is not allowed in any tool")
	case ActionTransaction:
		return a.policy(strings.ToUpper(arg1) + " is not allowed in any tool: each call runs as one statement in its own transaction")
	case ActionSavepoint:
		verb := map[string]string{"BEGIN": "SAVEPOINT", "RELEASE": "RELEASE", "ROLLBACK": "ROLLBACK TO"}[strings.ToUpper(arg1)]
		if verb == "" {
			verb = "SAVEPOINT"
		}
		return a.policy(verb + " is not allowed in any tool: each call runs as one statement in its own transaction")
	case ActionCreateTempIndex, ActionCreateTempTable, ActionCreateTempTrigger, ActionCreateTempView,
		ActionDropTempIndex, ActionDropTempTable, ActionDropTempTrigger, ActionDropTempView:
		return a.policy(actionWord(action) + " is not allowed in any tool: temporary objects are not supported")
	case ActionCreateTable, ActionCreateIndex, ActionCreateTrigger, ActionCreateView, ActionCreateVTable,
		ActionDropTable, ActionDropIndex, ActionDropTrigger, ActionDropView, ActionDropVTable,
		ActionAlterTable, ActionReindex, ActionAnalyze:
		db := dbName
		if action == ActionAlterTable {
			db = arg1 // ALTER TABLE reports (database, table)
		}
		if v := a.database(action, "", db); v != nil {
			return v
		}
		v := a.ddl(action, arg1, arg2, trigger)
		if v == nil {
			a.ddlSeen = true
		}
		return v
	}
	return a.policy(fmt.Sprintf("%s (authorizer action %d) is not allowed in any tool", actionWord(action), action))
}

// note records an allowed top-level action in the summary.
func (a *Authorizer) note(action int, arg1 string) {
	switch action {
	case ActionInsert, ActionUpdate, ActionDelete:
		if a.isShadow(arg1) || hasSQLitePrefix(arg1) {
			return
		}
		switch action {
		case ActionInsert:
			a.summary.Inserts = true
		case ActionUpdate:
			a.summary.Updates = true
		default:
			a.summary.Deletes = true
		}
	case ActionCreateTable, ActionCreateIndex, ActionCreateTrigger, ActionCreateView, ActionCreateVTable,
		ActionDropTable, ActionDropIndex, ActionDropTrigger, ActionDropView, ActionDropVTable,
		ActionAlterTable, ActionReindex, ActionAnalyze:
		a.summary.Schema = true
	}
}

func (a *Authorizer) write(action int, table, trigger string) *errcode.Error {
	switch {
	case IsProtected(table):
		return a.protected(table, trigger)
	case IsReplicationTable(table):
		return a.replication(actionWord(action), table, trigger)
	case isSchemaTable(table):
		// DDL bookkeeping, reported before the DDL action itself; SQLite
		// refuses direct writes ("may not be modified") without
		// writable_schema, which the policy and defensive mode both refuse.
		return nil
	case a.isShadow(table):
		// FTS5/R*Tree upkeep. R*Tree prepares these when it connects, even
		// for a SELECT; defensive mode keeps agent SQL off shadow tables.
		return nil
	case action == ActionDelete && a.ddlSeen && a.createView != "" && rawsqlite.SameName(table, a.createView):
		return nil // DROP VIEW reports a DELETE of the view it drops
	case hasSQLitePrefix(table):
		if a.ddlSeen && isUpkeepTable(table) {
			return nil // DROP TABLE and ALTER TABLE clean up sqlite_stat*/sqlite_sequence
		}
		msg := fmt.Sprintf("%s on %s is not allowed in any tool: it is SQLite's own table", actionWord(action), table)
		if action == ActionDelete && strings.HasPrefix(rawsqlite.FoldName(table), "sqlite_stat") {
			// ANALYZE t deletes t's rows before it reports itself.
			msg += " (ANALYZE of a single table or index clears its statistics this way and is refused too; run ANALYZE without a name)"
		}
		return a.policy(msg)
	}
	need := Write
	if action == ActionDelete {
		need = Destructive
	}
	return a.require(need, actionWord(action), trigger)
}

// ddl checks schema changes. arg1/arg2 follow SQLite's authorizer table.
func (a *Authorizer) ddl(action int, arg1, arg2, trigger string) *errcode.Error {
	object := arg1 // the table, view or virtual table concerned
	switch action {
	case ActionCreateIndex, ActionCreateTrigger, ActionDropIndex, ActionDropTrigger, ActionAlterTable:
		object = arg2
	}
	what := actionWord(action)
	if action != ActionReindex && action != ActionAnalyze {
		if IsProtected(object) {
			return a.protected(object, trigger)
		}
		if IsReplicationTable(object) {
			return a.replication(what, object, trigger)
		}
		// Agent SQL cannot CREATE TABLE sqlite_*: SQLite refuses the name
		// before asking, so such a CREATE is SQLite's own upkeep (ANALYZE,
		// the first AUTOINCREMENT table).
		upkeep := isUpkeepTable(object) && (a.ddlSeen || action == ActionCreateTable)
		if hasSQLitePrefix(object) && !upkeep {
			return a.policy(fmt.Sprintf("%s on %s is not allowed in any tool: it is SQLite's own table", what, object))
		}
	}
	switch action {
	case ActionCreateTable, ActionCreateIndex, ActionReindex, ActionAnalyze:
		if action == ActionCreateTable && isUpkeepTable(object) {
			what = "CREATE TABLE " + object + " (SQLite's upkeep for ANALYZE or AUTOINCREMENT)"
		}
		return a.require(Write, what, trigger)
	case ActionCreateVTable:
		suffixes, ok := vtabModules[rawsqlite.FoldName(arg2)]
		if !ok {
			return a.policy(fmt.Sprintf("CREATE VIRTUAL TABLE ... USING %s is not allowed in any tool; only the fts5 and rtree modules are", arg2))
		}
		if v := a.require(Write, what, trigger); v != nil {
			return v
		}
		if a.newShadow == nil {
			a.newShadow = make(map[string]bool)
		}
		for _, s := range suffixes {
			a.newShadow[rawsqlite.FoldName(arg1+s)] = true
		}
		return nil
	case ActionCreateView, ActionDropView:
		if a.createView != "" && rawsqlite.SameName(arg1, a.createView) {
			return nil
		}
		if action == ActionCreateView {
			if a.mode == Select {
				return a.readOnly("CREATE VIEW is not allowed in query_database: " + selectOnlyText)
			}
			return a.policy(fmt.Sprintf("CREATE VIEW is not allowed in %s; use create_view (it stores the view with its description)", a.mode.Tool()))
		}
	}
	return a.require(Destructive, what, trigger)
}

// database refuses changes outside the main database: temporary objects
// (CREATE TABLE temp.x reports CREATE_TABLE in database "temp", not
// CREATE_TEMP_TABLE) and anything attached. Schema upkeep of
// sqlite_temp_master (ALTER TABLE rewrites it) stays allowed.
func (a *Authorizer) database(action int, table, db string) *errcode.Error {
	switch {
	case db == "" || rawsqlite.SameName(db, "main"):
		return nil
	case rawsqlite.SameName(db, "temp"):
		if isSchemaTable(table) {
			return nil
		}
		return a.policy(actionWord(action) + " in the temp database is not allowed in any tool: temporary objects are not supported")
	}
	return a.policy(fmt.Sprintf("%s in database %s is not allowed in any tool: only the main database can be changed", actionWord(action), db))
}

// pragma judges PRAGMA name, with value unless valueNull. An introspection
// PRAGMA's argument names an object; any other PRAGMA with a value sets
// that value, even an empty one (PRAGMA journal_mode = ” leaves WAL,
// PRAGMA user_version = ” stores 0), so only its value-less read is
// allowed.
func (a *Authorizer) pragma(name, value string, valueNull bool) *errcode.Error {
	n := rawsqlite.FoldName(name)
	if a.mode == Select && !a.selectSeen {
		// Inside a SELECT, PRAGMAs come from pragma_* table-valued
		// functions and FTS5; a PRAGMA statement reports its PRAGMA first.
		msg := "PRAGMA " + n + " is not allowed in query_database: " + selectOnlyText
		if introspectionPragmas[n] || settingPragmas[n] {
			// The same rows are there as a table-valued function.
			arg := ""
			if !valueNull {
				arg = "('" + strings.ReplaceAll(value, "'", "''") + "')"
			}
			msg += "; read it as a table instead: SELECT * FROM pragma_" + n + arg
		}
		return a.readOnly(msg)
	}
	switch {
	case introspectionPragmas[n]:
		return nil
	case !valueNull:
		shown := value
		if shown == "" {
			shown = "''"
		}
		return a.policy(fmt.Sprintf("PRAGMA %s = %s is not allowed in any tool: a PRAGMA with a value sets it, whatever the value (even ''); reading a setting (PRAGMA %s, no value) is allowed", n, shown, n))
	case settingPragmas[n]:
		return nil
	}
	return a.policy(fmt.Sprintf("PRAGMA %s is not allowed in any tool; only introspection PRAGMAs (table_info, index_list, ...) and reads of settings are", n))
}

// selectOnlyText ends every refusal in the read-only profile.
const selectOnlyText = "only SELECT or WITH ... SELECT statements are allowed"

// require refuses what unless the mode is at least need.
func (a *Authorizer) require(need Mode, what, trigger string) *errcode.Error {
	if a.mode >= need {
		return nil
	}
	if trigger != "" {
		what += fmt.Sprintf(" (in trigger %s)", trigger)
	}
	if a.mode == Select {
		return a.readOnly(what + " is not allowed in query_database: " + selectOnlyText)
	}
	use := "use write_query"
	if need == Destructive {
		use = "use destructive_query (it snapshots the database first)"
	}
	return &errcode.Error{Code: errcode.ReadOnly, Message: fmt.Sprintf("%s is not allowed in %s; %s", what, a.mode.Tool(), use)}
}

func (a *Authorizer) protected(table, trigger string) *errcode.Error {
	name := rawsqlite.FoldName(table)
	msg := name + " is managed by the server and is append-only; it cannot be changed through SQL tools"
	if name == "query_errors" {
		msg = name + " is managed by the server; it cannot be changed through SQL tools"
	}
	if index := IsServerIndex(table); index != "" {
		what := name + " is"
		if index != name {
			what = name + " is a shadow table of " + index + ","
		}
		msg = what + " the server's full-text index of the memory; the server keeps it up to date and no SQL tool can change it (FTS commands such as 'rebuild', 'optimize' or 'delete-all' included). Read it with MATCH, bm25(), snippet() and highlight()"
	}
	if trigger != "" {
		msg += fmt.Sprintf(" (trigger %s writes to it)", trigger)
	}
	if a.mode == Select {
		return a.readOnly(msg)
	}
	return &errcode.Error{Code: errcode.Protected, Message: msg}
}

// policy is a refusal in every mode. The read-only profile's error codes
// have no POLICY_VIOLATION, so Select reports READ_ONLY_VIOLATION.
func (a *Authorizer) policy(msg string) *errcode.Error {
	if a.mode == Select {
		return a.readOnly(msg)
	}
	return &errcode.Error{Code: errcode.Policy, Message: msg}
}

func (a *Authorizer) readOnly(msg string) *errcode.Error {
	return &errcode.Error{Code: errcode.ReadOnly, Message: msg}
}

func (a *Authorizer) isShadow(table string) bool {
	t := rawsqlite.FoldName(table)
	return a.shadow[t] || a.newShadow[t]
}

func hasSQLitePrefix(name string) bool {
	return len(name) >= 7 && rawsqlite.SameName(name[:7], "sqlite_")
}

// isSchemaTable reports the schema tables whose writes are DDL bookkeeping.
func isSchemaTable(name string) bool {
	switch rawsqlite.FoldName(name) {
	case "sqlite_master", "sqlite_schema", "sqlite_temp_master", "sqlite_temp_schema":
		return true
	}
	return false
}

// isUpkeepTable reports the SQLite tables that DDL updates after itself.
func isUpkeepTable(name string) bool {
	switch rawsqlite.FoldName(name) {
	case "sqlite_sequence", "sqlite_stat1", "sqlite_stat2", "sqlite_stat3", "sqlite_stat4":
		return true
	}
	return false
}
