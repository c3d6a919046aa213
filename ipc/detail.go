package ipc

import "encoding/json"

// Detail is what a worker's answer adds to its call's audit row
// (query_log.detail): each field is one key, or one group of keys, there.
// The worker fills the fields; it crosses the pipe as the flat JSON
// object the audit row shows (Fields), and the front reads it back as
// that object, which it merges into the row without looking inside.
type Detail struct {
	// Snapshot is the snapshot a destructive statement took (Path ""
	// when snapshots are disabled), or the one the snapshot tool wrote.
	Snapshot *SnapshotDetail
	// CopiedAgain says a full snapshot was copied a second time, under
	// the write lock (said also when the request then failed).
	CopiedAgain bool
	// PreviousSQL is the definition create_view replaced.
	PreviousSQL string
	// SQL is the statement search_text ran; Search and Scan are its
	// request and what the scan found.
	SQL    string
	Search *Search
	Scan   *SearchScan

	// fields is the object read from the wire (UnmarshalJSON).
	fields map[string]any
}

// SnapshotDetail is the snapshot_* keys of an audit row.
type SnapshotDetail struct {
	Path string // "snapshot"
	// Kind, Why and Bytes describe a destructive statement's snapshot
	// (Kind "" for the snapshot tool's, which says only its path); Rows
	// is an undo record's rows put back.
	Kind    SnapshotKind
	Why     string
	Bytes   int64
	Rows    int64
	Foreign []string // files rotation did not trust ("snapshot_foreign")
}

// SearchScan is search_text's "scan" key: the plan and its counts.
type SearchScan struct {
	Columns         []string `json:"columns"`
	Key             string   `json:"key"`
	CandidateRows   int      `json:"candidate_rows"`
	MatchingValues  int      `json:"matching_values"`
	MatchingRows    int      `json:"matching_rows"`
	CandidateCapHit bool     `json:"candidate_cap_hit"`
}

// Fields is the detail as the audit row's keys: the object read from the
// wire, or the one the fields make. Nil for a nil Detail.
func (d *Detail) Fields() map[string]any {
	if d == nil {
		return nil
	}
	if d.fields != nil {
		return d.fields
	}
	m := map[string]any{}
	if s := d.Snapshot; s != nil {
		m["snapshot"] = s.Path
		if s.Kind != "" {
			m["snapshot_kind"], m["snapshot_why"], m["snapshot_bytes"] = s.Kind, s.Why, s.Bytes
			if s.Kind == SnapshotUndo {
				m["snapshot_rows"] = s.Rows
			}
		}
		if len(s.Foreign) > 0 {
			m["snapshot_foreign"] = s.Foreign
		}
	}
	if d.CopiedAgain {
		m["snapshot_copied_again"] = true
	}
	if d.PreviousSQL != "" {
		m["previous_sql"] = d.PreviousSQL
	}
	if d.SQL != "" {
		m["sql"] = d.SQL
	}
	if d.Search != nil {
		m["search"] = *d.Search
	}
	if d.Scan != nil {
		m["scan"] = d.Scan
	}
	return m
}

// MarshalJSON writes the detail as its flat object (Fields).
func (d *Detail) MarshalJSON() ([]byte, error) { return json.Marshal(d.Fields()) }

// UnmarshalJSON reads the flat object; Fields returns it as read.
func (d *Detail) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, &d.fields) }
