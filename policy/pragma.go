package policy

// introspectionPragmas describe the schema or check the file. Their argument
// names an object (PRAGMA table_info(t)), so an argument is not a write.
var introspectionPragmas = map[string]bool{
	"table_info":        true,
	"table_xinfo":       true,
	"table_list":        true,
	"index_list":        true,
	"index_info":        true,
	"index_xinfo":       true,
	"foreign_key_list":  true,
	"foreign_key_check": true,
	"function_list":     true,
	"collation_list":    true,
	"module_list":       true,
	"pragma_list":       true,
	"database_list":     true,
	"compile_options":   true,
	"integrity_check":   true,
	"quick_check":       true,
}

// settingPragmas may be read without a value (PRAGMA x, or SELECT * FROM
// pragma_x). With a value they are refused like every PRAGMA that is not
// introspection: SQLite reports PRAGMA x with a NULL value and
// PRAGMA x = ” with an empty one, and the worker's binding tells the two
// apart. The list includes the settings stored in the file.
var settingPragmas = map[string]bool{
	"application_id":            true,
	"auto_vacuum":               true,
	"automatic_index":           true,
	"busy_timeout":              true,
	"cache_size":                true,
	"cache_spill":               true,
	"cell_size_check":           true,
	"data_version":              true, // FTS5 reads it while it runs
	"defer_foreign_keys":        true,
	"encoding":                  true,
	"foreign_keys":              true,
	"freelist_count":            true,
	"hard_heap_limit":           true,
	"ignore_check_constraints":  true,
	"journal_mode":              true,
	"journal_size_limit":        true,
	"locking_mode":              true,
	"max_page_count":            true,
	"mmap_size":                 true,
	"page_count":                true,
	"page_size":                 true, // R*Tree reads it while it creates a table
	"query_only":                true,
	"read_uncommitted":          true,
	"recursive_triggers":        true,
	"reverse_unordered_selects": true,
	"schema_version":            true,
	"secure_delete":             true,
	"soft_heap_limit":           true,
	"synchronous":               true,
	"temp_store":                true,
	"threads":                   true,
	"trusted_schema":            true,
	"user_version":              true,
	"wal_autocheckpoint":        true,
}
