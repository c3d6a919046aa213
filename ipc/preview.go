package ipc

// PreviewRequest asks a worker for a dry run (SPEC 5.5): after the policy
// accepted the statement and before any snapshot, the statement runs in a
// transaction that is always rolled back, with the request's timeout and
// limits, and the worker answers what it would change.
//
// A statement that only reads is answered as it is, without a preview.
type PreviewRequest struct {
	// CommitIfHarmless commits the dry run as the real run when it deleted
	// and updated no row and dropped or altered nothing (a plain INSERT, a
	// CREATE TABLE): write_query under --confirm writes asks only about
	// statements that overwrite. The answer is then the statement's own,
	// without a preview. Never set with a Snapshot.
	CommitIfHarmless bool `json:"commit_if_harmless,omitempty"`
}

// Preview is what a dry run measured.
type Preview struct {
	// Changes is the number of rows the statement itself changed
	// (sqlite3_changes), which the real run's Response.Rows is compared
	// with.
	Changes int64 `json:"changes"`
	// Tables lists the rows changed per table and cause, the statement's
	// own changes first. Rows of tables the statement drops are counted in
	// Objects instead.
	Tables []TableChange `json:"tables,omitempty"`
	// Objects lists what the statement drops, creates or alters.
	Objects []ObjectChange `json:"objects,omitempty"`
	// Snapshot is the snapshot the real run takes first; nil when
	// snapshots are disabled or the request has none.
	Snapshot *SnapshotPlan `json:"snapshot,omitempty"`
}

// TableChange counts the rows of one table changed for one cause.
type TableChange struct {
	Table    string `json:"table"`
	Deleted  int64  `json:"deleted,omitempty"`
	Updated  int64  `json:"updated,omitempty"`
	Inserted int64  `json:"inserted,omitempty"`
	// Via is empty for the statement's own changes; otherwise what made
	// them: a foreign-key action ("ON DELETE CASCADE", "ON UPDATE SET
	// NULL", ...) or "trigger NAME" (or "trigger" when SQLite does not say
	// which).
	Via string `json:"via,omitempty"`
	// Triggers names the triggers of a Via "trigger ..." (the form quotes
	// each name).
	Triggers []string `json:"triggers,omitempty"`
	// Uncounted marks a virtual table whose changed rows the dry run could
	// not all count (what triggers do to it, a command or REPLACE the
	// counts do not explain): Deleted, Updated and Inserted are what it
	// measured, and more rows may change.
	Uncounted bool `json:"uncounted,omitempty"`
	// Net marks a virtual table counted from its rows before and after
	// the dry run (an FTS5 command, a trigger's writes): Inserted minus
	// Deleted is its net change, which the real run counts again
	// (Request.Recount).
	Net bool `json:"net,omitempty"`
}

// Object change actions.
const (
	ObjectDrop   = "DROP"
	ObjectCreate = "CREATE"
	ObjectAlter  = "ALTER"
)

// ObjectChange is one schema object the statement drops, creates or
// alters.
type ObjectChange struct {
	Action string `json:"action"` // ObjectDrop, ObjectCreate or ObjectAlter
	// Type is TABLE, INDEX, VIEW, TRIGGER or VIRTUAL TABLE.
	Type string `json:"type"`
	Name string `json:"name"`
	// Table is the table an index or trigger belongs to.
	Table string `json:"table,omitempty"`
	// Rows is how many rows a dropped table held.
	Rows int64 `json:"rows,omitempty"`
}

// SnapshotPlan is the snapshot a destructive statement's real run takes.
type SnapshotPlan struct {
	// Kind is SnapshotFull, or SnapshotUndo: an undo record (SPEC 5.6),
	// whose size is what the statement changes (Bytes is then the
	// database's size, which a full copy would have cost).
	Kind  SnapshotKind `json:"kind"`
	Bytes int64        `json:"bytes"`
}
