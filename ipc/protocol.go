package ipc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unsafe"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
)

// Version is the protocol version both sides speak. Bump it whenever a field
// changes meaning; a worker refuses a request of any other version, since
// the front and its worker come from one build (the front checks that
// before it serves: CheckWorker).
//
// Version 2 added progress frames before the response header, and the
// snapshot's own time budget and partial file name. Version 3 added the
// dry run: Request.Preview and Response.Preview. Version 4 added the
// memory alert, a progress frame of PhaseMemoryHigh. Version 5 gave the
// refusal of a request of another version the versions the worker speaks
// as numbers (Response.Speaks), and dropped the answers to requests of
// older versions (a version-1 answer without progress frames, no memory
// alert before version 4): no front sends them. Version 6 added the
// cluster's judge: Request.Judge and Request.Cluster, Response.Judgement.
const Version = 6

// PrewakeByte, a newline, may come before a request's frame (JSON lets a
// document begin with white space): the front's nudge that the request is
// on its way (Spawner.Prewake). A worker that reads it alone warms up
// again before it reads on (Executor.Rewarm).
const PrewakeByte = '\n'

// Frame size limits. A request carries one statement and its settings; a
// response carries at most a capped result, so anything larger is a bug or a
// hostile worker.
const MaxRequestBytes = 8 << 20

// MaxResponseBytes bounds a response frame; a variable so tests can lower it.
var MaxResponseBytes int64 = 64 << 20

// Op is an operation a worker performs.
type Op string

// Operations a worker performs.
const (
	OpQuery         Op = "query"          // run one agent statement (read/write/destructive/select mode)
	OpCreateView    Op = "create_view"    // compile a SELECT under the read policy, then store it as a view
	OpListTables    Op = "list_tables"    // tables and views with optional row counts
	OpDescribeTable Op = "describe_table" // columns, foreign keys, indexes
	OpSchema        Op = "get_schema"     // every CREATE statement as stored
	OpSearch        Op = "search_text"    // SQL narrows rows, a regexp matches inside them
	OpSnapshot      Op = "snapshot"       // back the database up now (Snapshot), run nothing else
)

// Mode is the policy mode a statement runs under (package policy's
// modes, by name; the worker parses it with policy.ParseMode).
type Mode string

// Policy modes.
const (
	ModeSelect      Mode = "select"      // one SELECT, nothing else (the readonly profile)
	ModeRead        Mode = "read"        // statements that read
	ModeWrite       Mode = "write"       // writes that destroy nothing
	ModeDestructive Mode = "destructive" // any write, after a snapshot
)

// Format is the shape of a read result.
type Format string

// Result formats.
const (
	FormatCSV  Format = "csv" // the default: CSV with a "# N rows" trailer
	FormatJSON Format = "json"
)

// Request is what the front asks of one worker process.
type Request struct {
	Version int    `json:"v"`
	Op      Op     `json:"op"`
	DB      string `json:"db"`
	// ReadOnlyFile opens the database read-only (the readonly profile).
	ReadOnlyFile bool `json:"read_only_file,omitempty"`
	// Mode is the policy mode: select, read, write or destructive.
	Mode Mode   `json:"mode,omitempty"`
	SQL  string `json:"sql,omitempty"`
	// Format of a read result: FormatCSV (also when empty) or FormatJSON.
	Format Format `json:"format,omitempty"`
	Limit  int    `json:"limit,omitempty"`
	Offset int    `json:"offset,omitempty"`

	Caps   Caps   `json:"caps"`
	Limits Limits `json:"limits"`

	Snapshot *Snapshot `json:"snapshot,omitempty"`
	// Preview asks for a dry run of the statement instead of the
	// statement (SPEC 5.5); see PreviewRequest.
	Preview *PreviewRequest `json:"preview,omitempty"`
	// Recount names the virtual tables whose rows the real run of a
	// confirmed statement counts before and after (Response.Recounted):
	// those its preview counted by their net change (TableChange.Net).
	Recount []string `json:"recount,omitempty"`
	View    *View    `json:"view,omitempty"`
	Table   *Table   `json:"table,omitempty"`
	Search  *Search  `json:"search,omitempty"`
	// Trace asks the worker to stamp its steps (Response.Trace): the
	// front's call tracing (MCP_SQLITE_CALLTRACE) is on.
	Trace bool `json:"trace,omitempty"`
	// Judge (OpQuery only) asks the worker to compile the statement under
	// Mode's policy and every check that precedes a write, and never to
	// run it: the answer's Judgement says how it may run. In a cluster the
	// front then sends Judgement.SQL to rqlite (SPEC 13).
	Judge bool `json:"judge,omitempty"`
	// Cluster holds the statement to what a cluster also refuses: VACUUM,
	// and in writes every function whose value can differ between nodes
	// (random(), 'now', CURRENT_TIMESTAMP, ...; policy.DivergentCall). A
	// cluster's worker never writes: a writing request with Cluster must
	// be a Judge request.
	Cluster bool `json:"cluster,omitempty"`
}

// Judgement is the worker's verdict on a statement it judged (Request.Judge).
type Judgement struct {
	// SQL is the one statement as judged, what the front sends: the
	// request's text without the white space, comments and semicolons
	// around it (a statement ending in a -- comment keeps its line break).
	SQL string `json:"sql"`
	// Reads is true for a statement answered as a read (a SELECT sent to
	// a writing tool, EXPLAIN): the front runs it as a read, not through
	// the cluster's write path.
	Reads bool `json:"reads,omitempty"`
	// Schema is true for a write that changes the schema (DDL, ANALYZE,
	// REINDEX): its answer is "ok: schema statement executed".
	Schema bool `json:"schema,omitempty"`
	// Inserts is true for a write that inserts (its answer names
	// last_insert_rowid).
	Inserts bool `json:"inserts,omitempty"`
	// UpdateGuard is true when the --max-update-rows guard applies: a pure
	// UPDATE (no upsert, no DDL) in write mode.
	UpdateGuard bool `json:"update_guard,omitempty"`
	// Returning is true for a write with RETURNING: its answer carries rows.
	Returning bool `json:"returning,omitempty"`
	// SchemaVersion is PRAGMA schema_version of the file the statement
	// was compiled against, read in the same read transaction: the write
	// must fail if the schema changed since (the front's guard).
	SchemaVersion int64 `json:"schema_version"`
	// Tables are the tables a destructive statement (or a trigger it
	// fires) inserts into, updates, deletes from, drops or alters, as the
	// authorizer named them, sorted: what its snapshot must keep.
	Tables []string `json:"tables,omitempty"`
}

// Caps bound what a result may contain (SPEC 3 and 8).
type Caps struct {
	MaxRows          int `json:"max_rows"`
	MaxResultBytes   int `json:"max_result_bytes"`
	MaxCellChars     int `json:"max_cell_chars"`
	MaxUpdateRows    int `json:"max_update_rows"`
	SearchCandidates int `json:"search_candidates,omitempty"`
}

// Limits are applied by the worker to itself before any SQL runs.
type Limits struct {
	// TimeoutMS is when the worker interrupts its own statement; the front
	// kills the process shortly after if it has not answered by then.
	TimeoutMS   int64 `json:"timeout_ms"`
	MemoryMB    int   `json:"memory_mb"`
	MaxGrowthMB int   `json:"max_growth_mb"`
	// Sandbox turns on the OS sandbox (Landlock, no_new_privs) where offered.
	Sandbox bool `json:"sandbox"`
}

// Snapshot asks a destructive query to back the database up first, or
// OpSnapshot to back it up and do nothing else.
type Snapshot struct {
	Dir  string `json:"dir"`
	Stem string `json:"stem"`
	// Keep is how many snapshots to keep, newest first; 0 disables them.
	Keep int `json:"keep"`
	// TimeoutMS is the snapshot's own time budget. The statement's
	// timeout (Limits.TimeoutMS) starts again when the snapshot is
	// complete, so a large database does not eat the statement's time.
	// 0 means the statement's timeout.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// Partial is the base name the snapshot is written under until it is
	// complete (then it is renamed); the front names it so that it can
	// remove what a killed worker left. Empty: the worker picks one.
	Partial string `json:"partial,omitempty"`
	// Mode is SnapshotFull (also when empty), SnapshotUndo, or
	// SnapshotAuto: an undo record when the database is larger than
	// FullMB MiB, else a full copy (SPEC 5.6).
	Mode   SnapshotKind `json:"mode,omitempty"`
	FullMB int          `json:"full_mb,omitempty"`
	// Reason is the agent's reason, kept in an undo record.
	Reason string `json:"reason,omitempty"`
}

// SnapshotKind is a kind of snapshot (SnapshotFull, SnapshotUndo), or
// the --snapshot-mode that picks one (those, or SnapshotAuto).
type SnapshotKind string

// Snapshot kinds and modes (--snapshot-mode).
const (
	// SnapshotFull is a copy of the whole file through the backup API.
	SnapshotFull SnapshotKind = "full"
	// SnapshotUndo is an undo record (SPEC 5.6).
	SnapshotUndo SnapshotKind = "undo"
	// SnapshotAuto (a mode only) takes an undo record when the database
	// is larger than Snapshot.FullMB MiB, else a full copy.
	SnapshotAuto SnapshotKind = "auto"
)

// View is create_view's request.
type View struct {
	Name        string `json:"name"`
	Select      string `json:"select"`
	Description string `json:"description,omitempty"`
	Replace     bool   `json:"replace,omitempty"`
}

// Table names the object of describe_table, and options of list_tables.
type Table struct {
	Name          string `json:"name,omitempty"`
	RowCounts     bool   `json:"row_counts,omitempty"`
	IncludeSystem bool   `json:"include_system,omitempty"`
	// JSON asks for the readonly profile's JSON shapes.
	JSON bool `json:"json,omitempty"`
}

// Search is search_text's request (SPEC 3).
type Search struct {
	Pattern      string   `json:"pattern"`
	Table        string   `json:"table"`
	Columns      []string `json:"columns,omitempty"`
	Where        string   `json:"where,omitempty"`
	KeyColumn    string   `json:"key_column,omitempty"`
	IgnoreCase   bool     `json:"ignore_case,omitempty"`
	FixedStrings bool     `json:"fixed_strings,omitempty"`
	ContextChars int      `json:"context_chars"`
	Limit        int      `json:"limit"`
	CandidateCap int      `json:"candidate_cap"`
}

// Response is a worker's one answer. On the wire it is one JSON line (the
// header) followed by TextBytes raw bytes of Text: a large CSV result then
// crosses the pipe without JSON escaping on one side and unescaping on the
// other.
type Response struct {
	Version int  `json:"v"`
	OK      bool `json:"ok"`
	// Code and Message describe a failure (OK false).
	Code    errcode.Code `json:"code,omitempty"`
	Message string       `json:"message,omitempty"`
	// Text is the result an agent reads (CSV, result line, SQL text).
	Text string `json:"-"`
	// JSON is the structured result of the readonly profile's tools and of
	// format="json"; Text then holds the same document.
	JSON json.RawMessage `json:"-"`
	// TextBytes and TextIsJSON describe the payload after the header line.
	TextBytes  int  `json:"text_bytes,omitempty"`
	TextIsJSON bool `json:"text_is_json,omitempty"`
	// Rows is the number of rows returned or affected, for the audit log.
	Rows int64 `json:"rows"`
	// Detail goes into the audit row (snapshot path, previous view SQL, ...).
	Detail *Detail `json:"detail,omitempty"`
	// Preview is the dry run's measure of a statement (a request with
	// Preview). Nil in an OK answer to such a request means the worker
	// found nothing to confirm and the response is the statement's own
	// answer (a read; with CommitIfHarmless, a write that overwrote
	// nothing, committed).
	Preview *Preview `json:"preview,omitempty"`
	// Recounted is the net change in rows of each table the request named
	// in Recount (after minus before), for those that could be counted.
	Recounted map[string]int64 `json:"recounted,omitempty"`
	// Trace is the worker's stamps, when the request asked (Request.Trace).
	Trace *WorkerStamps `json:"trace,omitempty"`
	// Speaks is, in the refusal of a request of a version the worker does
	// not speak, the versions it does: what CheckWorker reads.
	Speaks *Versions `json:"speaks,omitempty"`
	// Judgement answers a Judge request.
	Judgement *Judgement `json:"judgement,omitempty"`
}

// Versions is a range of protocol versions, both ends included.
type Versions struct {
	Min int `json:"min"`
	Max int `json:"max"`
}

// Has reports whether v is in the range.
func (r Versions) Has(v int) bool { return r.Min <= v && v <= r.Max }

func (r Versions) String() string {
	if r.Min == r.Max {
		return fmt.Sprintf("version %d", r.Min)
	}
	return fmt.Sprintf("versions %d to %d", r.Min, r.Max)
}

// VersionError refuses a request of a protocol version the worker does not
// speak. Its code is INVALID_ARGUMENT; Failure puts the versions the worker
// speaks into the response (Response.Speaks).
type VersionError struct {
	Got    int      // the request's version
	Speaks Versions // the worker's
}

func (e *VersionError) Error() string {
	return string(errcode.InvalidArgument) + ": " + e.message()
}

// message keeps the words "this worker speaks versions N to M", which
// fronts before version 5 read out of it.
func (e *VersionError) message() string {
	return fmt.Sprintf("request has protocol version %d; this worker speaks versions %d to %d (the server and worker binaries must come from the same build)", e.Got, e.Speaks.Min, e.Speaks.Max)
}

// ErrorCode is INVALID_ARGUMENT, for errcode.Of.
func (e *VersionError) ErrorCode() errcode.Code { return errcode.InvalidArgument }

// Is matches INVALID_ARGUMENT, for errors.Is.
func (e *VersionError) Is(target error) bool { return errcode.InvalidArgument.Is(target) }

// Err returns the response's failure as an *errcode.Error, or nil.
func (r *Response) Err() error {
	if r.OK {
		return nil
	}
	return &errcode.Error{Code: r.Code, Message: r.Message}
}

// Judged returns the verdict in the answer to a Judge request, or the
// failure the answer carries (a refusal keeps its code and message).
func (r *Response) Judged() (*Judgement, error) {
	if err := r.Err(); err != nil {
		return nil, err
	}
	if r.Judgement == nil {
		return nil, errcode.New(errcode.WorkerFailed, "the worker answered a judge request without a judgement; the statement was not sent")
	}
	return r.Judgement, nil
}

// Failure builds the response for err, keeping its code; the message of
// a coded error (wrapped or not) is its own, without the code.
func Failure(err error) *Response {
	r := &Response{Version: Version, Code: errcode.Of(err), Message: err.Error()}
	var e *errcode.Error
	var v *VersionError
	switch {
	case errors.As(err, &v):
		r.Message = v.message()
		r.Speaks = &v.Speaks
	case errors.As(err, &e):
		r.Message = e.Message
	}
	return r
}

var errEmptyFrame = errors.New("empty frame")

// WriteFrame writes v as one JSON document followed by a newline.
func WriteFrame(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// ReadRequest reads and checks one request frame: at most MaxRequestBytes,
// exactly one JSON document, a known version and operation.
func ReadRequest(r io.Reader) (*Request, error) {
	var req Request
	data, err := readAtMost(r, MaxRequestBytes)
	read := now()
	faultsAtRead := int64(-1)
	if bytes.Contains(data, []byte(`"trace":true`)) {
		// Counted from here when the request is traced, before the decode.
		faultsAtRead = pageFaults()
	}
	if err == nil {
		err = decodeFrame(data, &req)
	}
	if err != nil {
		return nil, errcode.New(errcode.InvalidArgument, "bad request frame: "+err.Error())
	}
	if req.Trace {
		workerStampsMu.Lock()
		workerStamps = &WorkerStamps{Woken: prewoke[0], Rewarmed: prewoke[1], Read: read, faultsAtRead: faultsAtRead, Decoded: now()}
		workerStampsMu.Unlock()
	}
	if req.Version != Version {
		return nil, &VersionError{Got: req.Version, Speaks: Versions{Version, Version}}
	}
	switch req.Op {
	case OpQuery, OpCreateView, OpListTables, OpDescribeTable, OpSchema, OpSearch, OpSnapshot:
	default:
		return nil, errcode.New(errcode.InvalidArgument, fmt.Sprintf("unknown op %q", req.Op))
	}
	if req.DB == "" {
		return nil, errcode.New(errcode.InvalidArgument, "request has no db path")
	}
	if req.Judge && (req.Op != OpQuery || req.Preview != nil) {
		return nil, errcode.New(errcode.InvalidArgument, fmt.Sprintf("judge is for op %q without a preview, not op %q", OpQuery, req.Op))
	}
	return &req, nil
}

// WriteResponse writes resp as its header line and raw payload.
func WriteResponse(w io.Writer, resp *Response) error {
	header := *resp
	header.TextBytes = len(resp.Text)
	header.TextIsJSON = resp.JSON != nil
	var buf bytes.Buffer
	buf.Grow(256 + min(len(resp.Text), bulkPayload))
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&header); err != nil {
		return err
	}
	if len(resp.Text) <= bulkPayload {
		buf.WriteString(resp.Text)
		_, err := w.Write(buf.Bytes())
		return err
	}
	// A bulk payload (an export) is written where it lies, not copied
	// behind the header first.
	if _, err := w.Write(buf.Bytes()); err != nil {
		return err
	}
	_, err := io.WriteString(w, resp.Text)
	return err
}

// Phase is what a worker is doing, in a progress frame.
type Phase string

// Progress phases.
const (
	// PhaseSnapshot: a destructive query is backing the database up
	// (Done of Total pages copied). The first such frame, with Done 0,
	// starts the snapshot's own time budget.
	PhaseSnapshot Phase = "snapshot"
	// PhaseStatement: the snapshot is complete and the statement runs;
	// its timeout starts now.
	PhaseStatement Phase = "statement"
	// PhaseSearch: search_text is matching (Done of Total candidate rows).
	PhaseSearch Phase = "search"
	// PhaseMemoryHigh is the memory alert, not progress: SQLite's memory
	// in use (Done bytes) reached the worker's mark (a sixteenth of its
	// budget, Total bytes), or a statement met the heap limit; at most
	// one per request. A worker that then dies without an answer ran out of
	// memory (RunOutOfMemory): the reason comes as this code, since the
	// runtime's dying words on stderr are no protocol. The front passes
	// it to no progress callback, and it moves no kill timer.
	PhaseMemoryHigh Phase = "memory_high"
)

// Progress is an interim frame. A worker may write any number of them
// before its response header, one JSON line each:
// {"v":5,"progress":{"phase":"snapshot","done":120,"total":4000}}.
// A line with a "progress" member is never the header. One of them may be
// the memory alert (PhaseMemoryHigh).
type Progress struct {
	Phase Phase `json:"phase"`
	Done  int64 `json:"done"`
	Total int64 `json:"total,omitempty"`
}

// maxProgressBytes bounds one progress frame line.
const maxProgressBytes = 1024

// WriteProgress writes one progress frame.
func WriteProgress(w io.Writer, p Progress) error {
	return WriteFrame(w, progressFrame{Version: Version, Progress: &p})
}

type progressFrame struct {
	Version  int       `json:"v"`
	Progress *Progress `json:"progress"`
}

// headerLine is any line before the payload: a progress frame or the
// response header.
type headerLine struct {
	Response
	Progress *Progress `json:"progress,omitempty"`
}

// bulkPayload is the payload size from which a response is written and
// read without an extra copy.
const bulkPayload = 64 << 10

// maxHeaderBytes bounds a response's header line: codes, messages, detail.
const maxHeaderBytes = 1 << 20

// ReadResponse reads and checks one response: the header line, then its
// payload. Progress frames before the header are checked and skipped. It
// returns as soon as header and payload are in, without waiting for the
// worker to exit.
func ReadResponse(r io.Reader) (*Response, error) {
	return ReadResponseProgress(r, nil)
}

// ReadResponseProgress is ReadResponse that passes every progress frame to
// progress (if not nil) as it arrives, before it returns.
func ReadResponseProgress(r io.Reader, progress func(Progress)) (*Response, error) {
	// Small: a header is a few hundred bytes, and a payload larger than
	// the buffer is read straight into its own slice. A 64 KiB buffer was
	// 64 KiB allocated and zeroed on every call.
	br := bufio.NewReaderSize(r, 4<<10)
	var resp Response
	for {
		line, err := readFrameLine(br, maxHeaderBytes)
		if err != nil {
			return nil, err
		}
		var h headerLine
		if err := readFrame(bytes.NewReader(line), maxHeaderBytes, &h); err != nil {
			return nil, err
		}
		if h.Progress == nil {
			resp = h.Response
			break
		}
		if err := checkProgress(&h, len(line)); err != nil {
			return nil, err
		}
		if progress != nil {
			progress(*h.Progress)
		}
	}
	if resp.Version != Version {
		return nil, fmt.Errorf("worker answered with protocol version %d, want %d", resp.Version, Version)
	}
	if !resp.OK && resp.Code == "" {
		return nil, fmt.Errorf("worker reported a failure without an error code")
	}
	if resp.TextBytes < 0 || int64(resp.TextBytes) > MaxResponseBytes {
		return nil, fmt.Errorf("frame larger than %d bytes", MaxResponseBytes)
	}
	if resp.TextBytes > 0 {
		payload := make([]byte, resp.TextBytes)
		if _, err := io.ReadFull(br, payload); err != nil {
			return nil, fmt.Errorf("payload cut short: %w", err)
		}
		// Text shares the payload rather than copying it (an export is
		// megabytes); nothing writes to payload after this.
		resp.Text = unsafe.String(unsafe.SliceData(payload), len(payload))
		if resp.TextIsJSON {
			resp.JSON = payload
		}
	}
	return &resp, nil
}

// checkProgress refuses a progress frame that is too long, of another
// version, carries anything of a response, or counts backwards.
func checkProgress(h *headerLine, size int) error {
	p := h.Progress
	switch {
	case size > maxProgressBytes:
		return fmt.Errorf("progress frame larger than %d bytes", maxProgressBytes)
	case h.Version != Version:
		return fmt.Errorf("worker sent a progress frame of protocol version %d, want %d", h.Version, Version)
	case h.OK || h.Code != "" || h.Message != "" || h.TextBytes != 0 || h.Rows != 0 || h.Detail != nil || h.Judgement != nil:
		return fmt.Errorf("progress frame with response fields")
	case p.Done < 0 || p.Total < 0:
		return fmt.Errorf("progress frame with a negative count")
	}
	return nil
}

// readFrameLine returns the bytes up to and including the first newline,
// or up to EOF when there is none; a line longer than max is an error. It
// reads nothing past the newline.
func readFrameLine(br *bufio.Reader, max int64) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if int64(len(line)+len(chunk)) > max {
			return nil, fmt.Errorf("frame larger than %d bytes", max)
		}
		line = append(line, chunk...)
		switch err {
		case nil, io.EOF:
			return line, nil
		case bufio.ErrBufferFull:
			continue
		default:
			return nil, err
		}
	}
}

// readFrame decodes exactly one JSON document from at most max bytes of r;
// anything after it but white space is an error.
func readFrame(r io.Reader, max int64, v any) error {
	data, err := readAtMost(r, max)
	if err != nil {
		return err
	}
	return decodeFrame(data, v)
}

// readAtMost reads r to its end, refusing more than max bytes.
func readAtMost(r io.Reader, max int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("frame larger than %d bytes", max)
	}
	return data, nil
}

// decodeFrame decodes exactly one JSON document from data.
func decodeFrame(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if err == io.EOF {
			return errEmptyFrame
		}
		return err
	}
	if dec.More() {
		return fmt.Errorf("more than one JSON document in frame")
	}
	return nil
}

// checkRequestSize refuses a request whose frame would be larger than a
// worker reads, before any worker is taken for it. Only requests whose
// texts could come near the limit (JSON escaping at most sextuples a
// character) are encoded to measure.
func checkRequestSize(req *Request) error {
	n := len(req.SQL) + len(req.DB)
	if v := req.View; v != nil {
		n += len(v.Name) + len(v.Select) + len(v.Description)
	}
	if t := req.Table; t != nil {
		n += len(t.Name)
	}
	if s := req.Search; s != nil {
		n += len(s.Pattern) + len(s.Table) + len(s.Where) + len(s.KeyColumn)
		for _, c := range s.Columns {
			n += len(c) + 3
		}
	}
	if s := req.Snapshot; s != nil {
		n += len(s.Dir) + len(s.Stem) + len(s.Partial) + len(s.Mode) + len(s.Reason)
	}
	if 6*n+(64<<10) < MaxRequestBytes {
		return nil
	}
	var buf countingWriter
	if err := WriteFrame(&buf, req); err != nil {
		return errcode.New(errcode.InvalidArgument, "the call cannot be encoded for a worker: "+err.Error())
	}
	if buf.n > MaxRequestBytes {
		return errcode.New(errcode.InvalidArgument, fmt.Sprintf("the call's text is %d bytes, more than the %d a worker accepts; send a shorter statement (nothing was run)", n, MaxRequestBytes))
	}
	return nil
}

type countingWriter struct{ n int }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += len(p)
	return len(p), nil
}
