package policy

// SQLite authorizer action codes (https://www.sqlite.org/c3ref/c_alter_table.html).
// They are the values of the action argument of [Authorizer.Authorize].
const (
	ActionCopy              = 0 // no longer used by SQLite
	ActionCreateIndex       = 1
	ActionCreateTable       = 2
	ActionCreateTempIndex   = 3
	ActionCreateTempTable   = 4
	ActionCreateTempTrigger = 5
	ActionCreateTempView    = 6
	ActionCreateTrigger     = 7
	ActionCreateView        = 8
	ActionDelete            = 9
	ActionDropIndex         = 10
	ActionDropTable         = 11
	ActionDropTempIndex     = 12
	ActionDropTempTable     = 13
	ActionDropTempTrigger   = 14
	ActionDropTempView      = 15
	ActionDropTrigger       = 16
	ActionDropView          = 17
	ActionInsert            = 18
	ActionPragma            = 19
	ActionRead              = 20
	ActionSelect            = 21
	ActionTransaction       = 22
	ActionUpdate            = 23
	ActionAttach            = 24
	ActionDetach            = 25
	ActionAlterTable        = 26
	ActionReindex           = 27
	ActionAnalyze           = 28
	ActionCreateVTable      = 29
	ActionDropVTable        = 30
	ActionFunction          = 31
	ActionSavepoint         = 32
	ActionRecursive         = 33
)

// Authorizer return codes.
const (
	OK   = 0 // SQLITE_OK: compile the action
	Deny = 1 // SQLITE_DENY: fail the statement with "not authorized"
)

// actionWords names an action the way an agent wrote it, for messages.
var actionWords = map[int]string{
	ActionCopy:              "COPY",
	ActionCreateIndex:       "CREATE INDEX",
	ActionCreateTable:       "CREATE TABLE",
	ActionCreateTempIndex:   "CREATE TEMP INDEX",
	ActionCreateTempTable:   "CREATE TEMP TABLE",
	ActionCreateTempTrigger: "CREATE TEMP TRIGGER",
	ActionCreateTempView:    "CREATE TEMP VIEW",
	ActionCreateTrigger:     "CREATE TRIGGER",
	ActionCreateView:        "CREATE VIEW",
	ActionDelete:            "DELETE",
	ActionDropIndex:         "DROP INDEX",
	ActionDropTable:         "DROP TABLE",
	ActionDropTempIndex:     "DROP INDEX of a temporary index",
	ActionDropTempTable:     "DROP TABLE of a temporary table",
	ActionDropTempTrigger:   "DROP TRIGGER of a temporary trigger",
	ActionDropTempView:      "DROP VIEW of a temporary view",
	ActionDropTrigger:       "DROP TRIGGER",
	ActionDropView:          "DROP VIEW",
	ActionInsert:            "INSERT",
	ActionPragma:            "PRAGMA",
	ActionRead:              "reading",
	ActionSelect:            "SELECT",
	ActionTransaction:       "transaction control",
	ActionUpdate:            "UPDATE",
	ActionAttach:            "ATTACH",
	ActionDetach:            "DETACH",
	ActionAlterTable:        "ALTER TABLE",
	ActionReindex:           "REINDEX",
	ActionAnalyze:           "ANALYZE",
	ActionCreateVTable:      "CREATE VIRTUAL TABLE",
	ActionDropVTable:        "DROP TABLE of a virtual table",
	ActionFunction:          "a function call",
	ActionSavepoint:         "SAVEPOINT",
	ActionRecursive:         "WITH RECURSIVE",
}

func actionWord(action int) string {
	if w, ok := actionWords[action]; ok {
		return w
	}
	return "an unknown SQLite action"
}
