package policy

import (
	"fmt"
	"strings"
	"sync"
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

// DSNParams returns the modernc.org/sqlite DSN query parameters that apply
// the connection backstops for mode: defensive mode, trusted_schema=OFF and,
// for Select and Read, query_only. SQLITE_LIMIT_ATTACHED is not a DSN
// parameter: set it with sqlite.Limit(conn, LimitAttached, 0).
func DSNParams(m Mode) string {
	p := "_defensive=1&_pragma=trusted_schema(0)"
	if m <= Read {
		p += "&_pragma=query_only(1)"
	}
	return p
}

// LimitAttached is SQLITE_LIMIT_ATTACHED, the sqlite3_limit category the
// worker sets to 0.
const LimitAttached = 7

// Violation codes (SPEC section 3).
const (
	CodeReadOnly  = "READ_ONLY_VIOLATION"
	CodePolicy    = "POLICY_VIOLATION"
	CodeProtected = "PROTECTED_TABLE"
)

// Violation is a refusal: Code is CodeReadOnly, CodePolicy or CodeProtected,
// Message says what was refused and which tool would allow it.
type Violation struct {
	Code    string
	Message string
}

// Error returns "CODE: message", the text the agent sees.
func (v *Violation) Error() string { return v.Code + ": " + v.Message }

// ProtectedTables are the server's own objects (query_errors is a view):
// readable, never changed through SQL tools.
var ProtectedTables = [...]string{"memory_events", "memory_checkpoints", "query_log", "query_errors"}

// IsProtected reports whether name is one of ProtectedTables, ignoring case
// as SQLite does.
func IsProtected(name string) bool {
	for _, p := range ProtectedTables {
		if strings.EqualFold(name, p) {
			return true
		}
	}
	return false
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

// Summary is what the statement does at top level (outside trigger bodies),
// ignoring SQLite's and virtual tables' bookkeeping.
type Summary struct {
	Inserts bool
	Updates bool
	Deletes bool
	Schema  bool // DDL, REINDEX or ANALYZE
	// SettingRead marks a value-less PRAGMA of a setting stored in the file
	// (journal_mode, user_version, ...). The authorizer cannot tell it from
	// PRAGMA x = '', which writes, so the caller must allow it only after
	// checking the compiled program for writes, and run it as a read.
	SettingRead bool
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
	violation  *Violation
	summary    Summary
	selectSeen bool            // the statement is a SELECT (or runs one) before any PRAGMA
	ddlSeen    bool            // an allowed DDL action came first, so SQLite's table upkeep follows
	pragmaFns  map[string]bool // pragma_* table-valued functions the statement reads
	newShadow  map[string]bool // shadow tables of a virtual table this statement creates
}

// New returns an Authorizer for mode.
func New(mode Mode, opts Options) *Authorizer {
	a := &Authorizer{mode: mode, shadow: make(map[string]bool), createView: opts.CreateView}
	for n, ok := range opts.ShadowTables {
		if ok {
			a.shadow[strings.ToLower(n)] = true
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
	a.pragmaFns = nil
	a.newShadow = nil
}

// Violation returns the first refusal since New or Reset, or nil.
func (a *Authorizer) Violation() *Violation {
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

// Authorize has the shape of SQLite's authorizer callback: it returns OK or
// Deny for one action and records the first refusal. trigger is the
// innermost trigger or view the action comes from ("" at top level).
func (a *Authorizer) Authorize(action int, arg1, arg2, dbName, trigger string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if v := a.decide(action, arg1, arg2, dbName, trigger); v != nil {
		if a.violation == nil {
			a.violation = v
		}
		return Deny
	}
	if trigger == "" {
		a.note(action, arg1)
	}
	return OK
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

func (a *Authorizer) decide(action int, arg1, arg2, dbName, trigger string) *Violation {
	switch action {
	case ActionSelect:
		a.selectSeen = true
		return nil
	case ActionRead:
		if n, ok := strings.CutPrefix(strings.ToLower(arg1), "pragma_"); ok {
			if a.pragmaFns == nil {
				a.pragmaFns = make(map[string]bool)
			}
			a.pragmaFns[n] = true
		}
		return nil
	case ActionRecursive:
		return nil
	case ActionFunction:
		if why, bad := deniedFunctions[strings.ToLower(arg2)]; bad {
			return a.policy(fmt.Sprintf("%s() is not allowed in any tool: %s", arg2, why))
		}
		return nil
	case ActionPragma:
		return a.pragma(arg1, arg2)
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

func (a *Authorizer) write(action int, table, trigger string) *Violation {
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
	case action == ActionDelete && a.ddlSeen && a.createView != "" && strings.EqualFold(table, a.createView):
		return nil // DROP VIEW reports a DELETE of the view it drops
	case hasSQLitePrefix(table):
		if a.ddlSeen && isUpkeepTable(table) {
			return nil // DROP TABLE and ALTER TABLE clean up sqlite_stat*/sqlite_sequence
		}
		msg := fmt.Sprintf("%s on %s is not allowed in any tool: it is SQLite's own table", actionWord(action), table)
		if action == ActionDelete && strings.HasPrefix(strings.ToLower(table), "sqlite_stat") {
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
func (a *Authorizer) ddl(action int, arg1, arg2, trigger string) *Violation {
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
		suffixes, ok := vtabModules[strings.ToLower(arg2)]
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
			a.newShadow[strings.ToLower(arg1+s)] = true
		}
		return nil
	case ActionCreateView, ActionDropView:
		if a.createView != "" && strings.EqualFold(arg1, a.createView) {
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
func (a *Authorizer) database(action int, table, db string) *Violation {
	switch {
	case db == "" || strings.EqualFold(db, "main"):
		return nil
	case strings.EqualFold(db, "temp"):
		if isSchemaTable(table) {
			return nil
		}
		return a.policy(actionWord(action) + " in the temp database is not allowed in any tool: temporary objects are not supported")
	}
	return a.policy(fmt.Sprintf("%s in database %s is not allowed in any tool: only the main database can be changed", actionWord(action), db))
}

func (a *Authorizer) pragma(name, value string) *Violation {
	n := strings.ToLower(name)
	if a.mode == Select && !a.selectSeen {
		// Inside a SELECT, PRAGMAs come from pragma_* table-valued
		// functions and FTS5; a PRAGMA statement reports its PRAGMA first.
		return a.readOnly("PRAGMA " + n + " is not allowed in query_database: " + selectOnlyText)
	}
	switch {
	case introspectionPragmas[n]:
		return nil
	case value != "":
		return a.policy(fmt.Sprintf("PRAGMA %s = %s is not allowed in any tool: PRAGMAs that set a value are refused; reading a setting (PRAGMA %s) is allowed", n, value, n))
	case settingPragmas[n]:
		return nil
	case persistentPragmas[n]:
		// pragma_x reports READ pragma_x while compiling and PRAGMA x
		// when it runs; a PRAGMA x statement reports only the PRAGMA.
		if a.pragmaFns[n] {
			return nil
		}
		a.summary.SettingRead = true
		return nil
	}
	return a.policy(fmt.Sprintf("PRAGMA %s is not allowed in any tool; only introspection PRAGMAs (table_info, index_list, ...) and reads of settings are", n))
}

// selectOnlyText ends every refusal in the read-only profile.
const selectOnlyText = "only SELECT or WITH ... SELECT statements are allowed"

// require refuses what unless the mode is at least need.
func (a *Authorizer) require(need Mode, what, trigger string) *Violation {
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
	return &Violation{Code: CodeReadOnly, Message: fmt.Sprintf("%s is not allowed in %s; %s", what, a.mode.Tool(), use)}
}

func (a *Authorizer) protected(table, trigger string) *Violation {
	name := strings.ToLower(table)
	msg := name + " is managed by the server and is append-only; it cannot be changed through SQL tools"
	if name == "query_errors" {
		msg = name + " is managed by the server; it cannot be changed through SQL tools"
	}
	if trigger != "" {
		msg += fmt.Sprintf(" (trigger %s writes to it)", trigger)
	}
	if a.mode == Select {
		return a.readOnly(msg)
	}
	return &Violation{Code: CodeProtected, Message: msg}
}

// policy is a refusal in every mode. The read-only profile's error codes
// have no POLICY_VIOLATION, so Select reports READ_ONLY_VIOLATION.
func (a *Authorizer) policy(msg string) *Violation {
	if a.mode == Select {
		return a.readOnly(msg)
	}
	return &Violation{Code: CodePolicy, Message: msg}
}

func (a *Authorizer) readOnly(msg string) *Violation {
	return &Violation{Code: CodeReadOnly, Message: msg}
}

func (a *Authorizer) isShadow(table string) bool {
	t := strings.ToLower(table)
	return a.shadow[t] || a.newShadow[t]
}

func hasSQLitePrefix(name string) bool {
	return len(name) >= 7 && strings.EqualFold(name[:7], "sqlite_")
}

// isSchemaTable reports the schema tables whose writes are DDL bookkeeping.
func isSchemaTable(name string) bool {
	switch strings.ToLower(name) {
	case "sqlite_master", "sqlite_schema", "sqlite_temp_master", "sqlite_temp_schema":
		return true
	}
	return false
}

// isUpkeepTable reports the SQLite tables that DDL updates after itself.
func isUpkeepTable(name string) bool {
	switch strings.ToLower(name) {
	case "sqlite_sequence", "sqlite_stat1", "sqlite_stat2", "sqlite_stat3", "sqlite_stat4":
		return true
	}
	return false
}
