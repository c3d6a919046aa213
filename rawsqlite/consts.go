package rawsqlite

import sqlite3 "modernc.org/sqlite/lib"

// Primary result codes that callers map to their own error codes. An
// [Error] carries the extended code; compare these with [Error.Primary].
const (
	ResultOK         = sqlite3.SQLITE_OK
	ResultError      = sqlite3.SQLITE_ERROR
	ResultBusy       = sqlite3.SQLITE_BUSY
	ResultLocked     = sqlite3.SQLITE_LOCKED
	ResultNoMem      = sqlite3.SQLITE_NOMEM
	ResultReadOnly   = sqlite3.SQLITE_READONLY
	ResultInterrupt  = sqlite3.SQLITE_INTERRUPT
	ResultIOErr      = sqlite3.SQLITE_IOERR
	ResultCorrupt    = sqlite3.SQLITE_CORRUPT
	ResultCantOpen   = sqlite3.SQLITE_CANTOPEN
	ResultFull       = sqlite3.SQLITE_FULL
	ResultTooBig     = sqlite3.SQLITE_TOOBIG
	ResultConstraint = sqlite3.SQLITE_CONSTRAINT
	ResultMisuse     = sqlite3.SQLITE_MISUSE
	ResultAuth       = sqlite3.SQLITE_AUTH
	ResultRange      = sqlite3.SQLITE_RANGE
	ResultNotADB     = sqlite3.SQLITE_NOTADB
)

// Storage classes returned by [Stmt.ColumnType].
const (
	TypeInteger = sqlite3.SQLITE_INTEGER
	TypeFloat   = sqlite3.SQLITE_FLOAT
	TypeText    = sqlite3.SQLITE_TEXT
	TypeBlob    = sqlite3.SQLITE_BLOB
	TypeNull    = sqlite3.SQLITE_NULL
)

// Limit ids for [Conn.Limit] (SQLITE_LIMIT_*).
const (
	LimitLength            = sqlite3.SQLITE_LIMIT_LENGTH
	LimitSQLLength         = sqlite3.SQLITE_LIMIT_SQL_LENGTH
	LimitColumn            = sqlite3.SQLITE_LIMIT_COLUMN
	LimitExprDepth         = sqlite3.SQLITE_LIMIT_EXPR_DEPTH
	LimitCompoundSelect    = sqlite3.SQLITE_LIMIT_COMPOUND_SELECT
	LimitVDBEOp            = sqlite3.SQLITE_LIMIT_VDBE_OP
	LimitFunctionArg       = sqlite3.SQLITE_LIMIT_FUNCTION_ARG
	LimitAttached          = sqlite3.SQLITE_LIMIT_ATTACHED
	LimitLikePatternLength = sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH
	LimitVariableNumber    = sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER
	LimitTriggerDepth      = sqlite3.SQLITE_LIMIT_TRIGGER_DEPTH
	LimitWorkerThreads     = sqlite3.SQLITE_LIMIT_WORKER_THREADS
)

// Boolean connection options for [Conn.DBConfig] (SQLITE_DBCONFIG_*). Only
// options that take (int onoff, int *pRes) are listed; DBConfig refuses any
// other op, because passing the wrong C varargs would corrupt memory.
const (
	ConfigEnableFKey           = sqlite3.SQLITE_DBCONFIG_ENABLE_FKEY
	ConfigEnableTrigger        = sqlite3.SQLITE_DBCONFIG_ENABLE_TRIGGER
	ConfigEnableView           = sqlite3.SQLITE_DBCONFIG_ENABLE_VIEW
	ConfigEnableFTS3Tokenizer  = sqlite3.SQLITE_DBCONFIG_ENABLE_FTS3_TOKENIZER
	ConfigEnableLoadExtension  = sqlite3.SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION
	ConfigNoCkptOnClose        = sqlite3.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE
	ConfigEnableQPSG           = sqlite3.SQLITE_DBCONFIG_ENABLE_QPSG
	ConfigTriggerEQP           = sqlite3.SQLITE_DBCONFIG_TRIGGER_EQP
	ConfigResetDatabase        = sqlite3.SQLITE_DBCONFIG_RESET_DATABASE
	ConfigDefensive            = sqlite3.SQLITE_DBCONFIG_DEFENSIVE
	ConfigWritableSchema       = sqlite3.SQLITE_DBCONFIG_WRITABLE_SCHEMA
	ConfigLegacyAlterTable     = sqlite3.SQLITE_DBCONFIG_LEGACY_ALTER_TABLE
	ConfigDQSDML               = sqlite3.SQLITE_DBCONFIG_DQS_DML
	ConfigDQSDDL               = sqlite3.SQLITE_DBCONFIG_DQS_DDL
	ConfigLegacyFileFormat     = sqlite3.SQLITE_DBCONFIG_LEGACY_FILE_FORMAT
	ConfigTrustedSchema        = sqlite3.SQLITE_DBCONFIG_TRUSTED_SCHEMA
	ConfigStmtScanStatus       = sqlite3.SQLITE_DBCONFIG_STMT_SCANSTATUS
	ConfigReverseScanOrder     = sqlite3.SQLITE_DBCONFIG_REVERSE_SCANORDER
	ConfigEnableAttachCreate   = sqlite3.SQLITE_DBCONFIG_ENABLE_ATTACH_CREATE
	ConfigEnableAttachWrite    = sqlite3.SQLITE_DBCONFIG_ENABLE_ATTACH_WRITE
	ConfigEnableComments       = sqlite3.SQLITE_DBCONFIG_ENABLE_COMMENTS
	configFirstBool, configEnd = ConfigEnableFKey, ConfigEnableComments + 1
)

// Authorizer action codes (SQLITE_CREATE_INDEX ... SQLITE_RECURSIVE), with
// SQLite's numeric values. The comments give (arg1, arg2) as SQLite fills
// them; see https://sqlite.org/c3ref/c_alter_table.html.
const (
	AuthCreateIndex       = sqlite3.SQLITE_CREATE_INDEX        // 1: index name, table name
	AuthCreateTable       = sqlite3.SQLITE_CREATE_TABLE        // 2: table name, ""
	AuthCreateTempIndex   = sqlite3.SQLITE_CREATE_TEMP_INDEX   // 3: index name, table name
	AuthCreateTempTable   = sqlite3.SQLITE_CREATE_TEMP_TABLE   // 4: table name, ""
	AuthCreateTempTrigger = sqlite3.SQLITE_CREATE_TEMP_TRIGGER // 5: trigger name, table name
	AuthCreateTempView    = sqlite3.SQLITE_CREATE_TEMP_VIEW    // 6: view name, ""
	AuthCreateTrigger     = sqlite3.SQLITE_CREATE_TRIGGER      // 7: trigger name, table name
	AuthCreateView        = sqlite3.SQLITE_CREATE_VIEW         // 8: view name, ""
	AuthDelete            = sqlite3.SQLITE_DELETE              // 9: table name, ""
	AuthDropIndex         = sqlite3.SQLITE_DROP_INDEX          // 10: index name, table name
	AuthDropTable         = sqlite3.SQLITE_DROP_TABLE          // 11: table name, ""
	AuthDropTempIndex     = sqlite3.SQLITE_DROP_TEMP_INDEX     // 12: index name, table name
	AuthDropTempTable     = sqlite3.SQLITE_DROP_TEMP_TABLE     // 13: table name, ""
	AuthDropTempTrigger   = sqlite3.SQLITE_DROP_TEMP_TRIGGER   // 14: trigger name, table name
	AuthDropTempView      = sqlite3.SQLITE_DROP_TEMP_VIEW      // 15: view name, ""
	AuthDropTrigger       = sqlite3.SQLITE_DROP_TRIGGER        // 16: trigger name, table name
	AuthDropView          = sqlite3.SQLITE_DROP_VIEW           // 17: view name, ""
	AuthInsert            = sqlite3.SQLITE_INSERT              // 18: table name, ""
	AuthPragma            = sqlite3.SQLITE_PRAGMA              // 19: pragma name, value or ""
	AuthRead              = sqlite3.SQLITE_READ                // 20: table name, column name
	AuthSelect            = sqlite3.SQLITE_SELECT              // 21: "", ""
	AuthTransaction       = sqlite3.SQLITE_TRANSACTION         // 22: operation, ""
	AuthUpdate            = sqlite3.SQLITE_UPDATE              // 23: table name, column name
	AuthAttach            = sqlite3.SQLITE_ATTACH              // 24: filename, ""
	AuthDetach            = sqlite3.SQLITE_DETACH              // 25: database name, ""
	AuthAlterTable        = sqlite3.SQLITE_ALTER_TABLE         // 26: database name, table name
	AuthReindex           = sqlite3.SQLITE_REINDEX             // 27: index name, ""
	AuthAnalyze           = sqlite3.SQLITE_ANALYZE             // 28: table name, ""
	AuthCreateVTable      = sqlite3.SQLITE_CREATE_VTABLE       // 29: table name, module name
	AuthDropVTable        = sqlite3.SQLITE_DROP_VTABLE         // 30: table name, module name
	AuthFunction          = sqlite3.SQLITE_FUNCTION            // 31: "", function name
	AuthSavepoint         = sqlite3.SQLITE_SAVEPOINT           // 32: operation, savepoint name
	AuthRecursive         = sqlite3.SQLITE_RECURSIVE           // 33: "", ""
)

// Authorizer return values.
const (
	AuthOK     = sqlite3.SQLITE_OK     // allow
	AuthDeny   = sqlite3.SQLITE_DENY   // fail the prepare with "not authorized"
	AuthIgnore = sqlite3.SQLITE_IGNORE // READ: the column reads as NULL; most others: the action is silently left out
)
