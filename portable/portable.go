// Package portable moves a memory between files (SPEC 5.4): export
// writes the chain's events and checkpoints as JSON Lines, VerifyJSONL
// checks such a file offline, and Import builds a new database whose rows
// and hashes are the exported ones. An export is untrusted input: it is
// read strictly (jsonline.go).
package portable

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/memory"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/osfile"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

// Portable memory (SPEC 5.4): the chain as JSON Lines, one object a line,
// every column of every row:
//
//	{"type":"event","id":1,"ts":"...","session":"...","kind":"note","content":"...","prev_hash":"000...","hash":"fd0c..."}
//	{"type":"checkpoint","id":1,"ts":"...","session":"...","summary":"...","last_event_id":1,"head_hash":"fd0c..."}
//
// Events in id order; each checkpoint follows the event it is anchored to
// (last_event_id; a checkpoint of the empty chain comes first). Strings are
// written in the chain's canonical form (SPEC 5.1: UTF-8 kept raw, only '"',
// '\\' and control characters escaped; a byte that is not UTF-8 as \udcXX,
// see jsonline.go), so an export is deterministic: the same rows always
// give the same bytes, and export -> import -> export is byte-identical.
// Any JSON reader reads it.

// ExportStats counts what Export wrote.
type ExportStats struct {
	Events, Checkpoints int64
}

// exportProgressEvery is how many events Export writes between progress
// calls.
const exportProgressEvery = 50_000

// Export writes every event and checkpoint as JSON Lines to w, streaming
// from one read transaction (a consistent snapshot while appends go on).
// progress, when not nil, is called every exportProgressEvery events with
// the events written and the chain's highest id. Export does not judge the
// chain; verify the export (VerifyJSONL) or the database for that. It
// refuses only what an export cannot carry: an event column stored as
// something other than text, which Verify counts as a break.
func Export(ctx context.Context, s *memory.Store, w io.Writer, progress func(done, total int64)) (ExportStats, error) {
	var st ExportStats
	c, err := rawsqlite.Open(s.Path(), rawsqlite.ReadOnly)
	if err != nil {
		return st, fmt.Errorf("portable: export: %w", err)
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, c.Interrupt)
	defer stop()
	if err := c.BusyTimeout(memory.BusyTimeout); err != nil {
		return st, fmt.Errorf("portable: export: %w", err)
	}
	if err := c.Exec("BEGIN"); err != nil {
		return st, fmt.Errorf("portable: export: %w", err)
	}
	defer func() { _ = c.Exec("ROLLBACK") }()

	checkpoints, err := readCheckpoints(c)
	if err != nil {
		return st, fmt.Errorf("portable: export: %w", err)
	}
	var total int64
	if err := queryOne(c, `SELECT coalesce(max(id), 0) FROM memory_events`, func(q *rawsqlite.Stmt) { total = q.ColumnInt64(0) }); err != nil {
		return st, fmt.Errorf("portable: export: %w", err)
	}
	rows, _, err := c.Prepare(`SELECT id, ts, session, kind, content, prev_hash, hash FROM memory_events ORDER BY id`)
	if err != nil {
		return st, fmt.Errorf("portable: export: %w", err)
	}
	defer rows.Finalize()

	bw := bufio.NewWriterSize(w, 1<<20)
	var line []byte
	next := 0 // the next checkpoint to write
	flushCheckpoints := func(before int64) error {
		for ; next < len(checkpoints) && checkpoints[next].LastEventID < before; next++ {
			line = appendCheckpointLine(line[:0], checkpoints[next])
			if _, err := bw.Write(line); err != nil {
				return err
			}
			st.Checkpoints++
		}
		return nil
	}
	for {
		ok, err := rows.Step()
		if err != nil {
			return st, fmt.Errorf("portable: export: %w", err)
		}
		if !ok {
			break
		}
		id := rows.ColumnInt64(0)
		if err := flushCheckpoints(id); err != nil {
			return st, fmt.Errorf("portable: export: %w", err)
		}
		line = append(line[:0], `{"type":"event","id":`...)
		line = strconv.AppendInt(line, id, 10)
		for i, name := range eventFields {
			// Verify counts a value that is not text (a BLOB another
			// program stored) as a break; an export holds strings only
			// and would read as intact.
			if typ := rows.ColumnType(i + 1); typ != rawsqlite.TypeText {
				return st, fmt.Errorf("portable: export: event %d: its %s is stored as %s, not text, so the chain is broken there (verify --db says so) and an export, which holds text only, would hide the break; the export stops there", id, name[2:len(name)-2], storageClass(typ))
			}
			line = appendExportBytes(append(line, name...), rows.ColumnTextView(i+1))
		}
		line = append(line, "}\n"...)
		if _, err := bw.Write(line); err != nil {
			return st, fmt.Errorf("portable: export: %w", err)
		}
		st.Events++
		if progress != nil && st.Events%exportProgressEvery == 0 {
			progress(st.Events, total)
		}
	}
	if err := flushCheckpoints(1<<63 - 1); err != nil {
		return st, fmt.Errorf("portable: export: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return st, fmt.Errorf("portable: export: %w", err)
	}
	if progress != nil {
		progress(st.Events, total)
	}
	return st, nil
}

// eventFields are the keys of an event line after "id", in column order.
var eventFields = [...]string{`,"ts":`, `,"session":`, `,"kind":`, `,"content":`, `,"prev_hash":`, `,"hash":`}

// storageClass names a SQLite storage class as typeof() does.
func storageClass(typ int) string {
	switch typ {
	case rawsqlite.TypeBlob:
		return "a blob"
	case rawsqlite.TypeNull:
		return "null"
	case rawsqlite.TypeInteger:
		return "an integer"
	case rawsqlite.TypeFloat:
		return "a real"
	}
	return "text"
}

// readCheckpoints reads every checkpoint, ordered as the export writes them.
func readCheckpoints(c *rawsqlite.Conn) ([]memory.Checkpoint, error) {
	q, _, err := c.Prepare(`SELECT id, ts, session, summary, last_event_id, head_hash FROM memory_checkpoints ORDER BY last_event_id, id`)
	if err != nil {
		return nil, err
	}
	defer q.Finalize()
	var out []memory.Checkpoint
	for {
		ok, err := q.Step()
		if err != nil || !ok {
			return out, err
		}
		out = append(out, memory.Checkpoint{
			ID: q.ColumnInt64(0), TS: q.ColumnText(1), Session: q.ColumnText(2), Summary: q.ColumnText(3),
			LastEventID: q.ColumnInt64(4), HeadHash: q.ColumnText(5),
		})
	}
}

func queryOne(c *rawsqlite.Conn, sql string, read func(*rawsqlite.Stmt)) error {
	q, _, err := c.Prepare(sql)
	if err != nil {
		return err
	}
	defer q.Finalize()
	ok, err := q.Step()
	if err == nil && ok {
		read(q)
	}
	return err
}

func appendCheckpointLine(dst []byte, c memory.Checkpoint) []byte {
	dst = append(dst, `{"type":"checkpoint","id":`...)
	dst = strconv.AppendInt(dst, c.ID, 10)
	dst = appendExportString(append(dst, `,"ts":`...), c.TS)
	dst = appendExportString(append(dst, `,"session":`...), c.Session)
	dst = appendExportString(append(dst, `,"summary":`...), c.Summary)
	dst = strconv.AppendInt(append(dst, `,"last_event_id":`...), c.LastEventID, 10)
	dst = appendExportString(append(dst, `,"head_hash":`...), c.HeadHash)
	return append(dst, "}\n"...)
}

// LineError is an export line that cannot be read or imported: Line is its
// number (from 1).
type LineError struct {
	Line int
	Msg  string
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// ErrTargetNotEmpty: Import's target already holds memory rows.
var ErrTargetNotEmpty = memory.ErrTargetNotEmpty

// exportKeys are the keys of each kind of line, exactly as Export writes
// them (and "type").
var exportKeys = map[string][]string{
	"event":      {"id", "ts", "session", "kind", "content", "prev_hash", "hash"},
	"checkpoint": {"id", "ts", "session", "summary", "last_event_id", "head_hash"},
}

// intKeys are the keys whose values are integers; the others are strings.
var intKeys = map[string]bool{"id": true, "last_event_id": true}

// readItems reads an export line by line and calls fn with each line's
// number and its event or checkpoint (isEvent tells which). A line that is
// not one JSON object of either shape, keys matched exactly and each once,
// UTF-8 and at most MaxLineBytes long, is a *LineError.
func readItems(r io.Reader, fn func(line int, isEvent bool, e memory.Event, c memory.Checkpoint) error) error {
	br := bufio.NewReaderSize(r, 1<<20)
	var buf []byte
	for n := 1; ; n++ {
		raw, err := readLine(br, buf)
		if errors.Is(err, errLineTooLong) {
			return &LineError{n, err.Error()}
		}
		if err != nil && err != io.EOF {
			return err
		}
		if len(raw) == 0 && err == io.EOF {
			return nil
		}
		buf = raw
		keys, values, perr := parseObject(raw)
		if perr != nil {
			return &LineError{n, "not an export line (one JSON object per line): " + perr.Error()}
		}
		typ, ok := values["type"]
		if !ok || typ.isNum {
			return &LineError{n, `"type" must be "event" or "checkpoint"`}
		}
		want, ok := exportKeys[typ.str]
		if !ok {
			return &LineError{n, fmt.Sprintf(`"type" must be "event" or "checkpoint", got %q`, typ.str)}
		}
		for _, k := range keys {
			switch {
			case k == "type":
			case !slices.Contains(want, k):
				other := "event"
				if typ.str == "event" {
					other = "checkpoint"
				}
				if slices.Contains(exportKeys[other], k) {
					return &LineError{n, fmt.Sprintf("a %s line has the %s field %q", typ.str, other, k)}
				}
				return &LineError{n, fmt.Sprintf("unknown field %q (keys match exactly, in lower case: %s)", k, strings.Join(want, ", "))}
			case values[k].isNum != intKeys[k]:
				kind := "a string"
				if intKeys[k] {
					kind = "an integer"
				}
				return &LineError{n, fmt.Sprintf("the value of %q must be %s", k, kind)}
			}
		}
		var missing []string
		for _, k := range want {
			if _, ok := values[k]; !ok {
				missing = append(missing, `"`+k+`"`)
			}
		}
		if len(missing) > 0 {
			return &LineError{n, fmt.Sprintf("%s line lacks %v", typ.str, missing)}
		}
		str := func(k string) string { return values[k].str }
		if typ.str == "event" {
			err = fn(n, true, memory.Event{ID: values["id"].num, TS: str("ts"), Session: str("session"), Kind: str("kind"), Content: str("content"), PrevHash: str("prev_hash"), Hash: str("hash")}, memory.Checkpoint{})
		} else {
			err = fn(n, false, memory.Event{}, memory.Checkpoint{ID: values["id"].num, TS: str("ts"), Session: str("session"), Summary: str("summary"), LastEventID: values["last_event_id"].num, HeadHash: str("head_hash")})
		}
		if err != nil {
			return err
		}
	}
}

// chainCheck is memory.ChainCheck with the checkpoints of an export:
// each must follow the event it is anchored to.
type chainCheck struct {
	*memory.ChainCheck
	// lastCheckpoint is the id of the last checkpoint read.
	lastCheckpoint int64
}

func newChainCheck() *chainCheck {
	return &chainCheck{ChainCheck: memory.NewChainCheck()}
}

// addCheckpoint checks c as Import does: ids increase, and each
// checkpoint follows the event it is anchored to (last_event_id, and its
// head_hash is that event's hash). It returns why c is refused, or "".
// After a break of the chain there is no anchor to judge by: it only
// counts (import refuses at the break).
func (c *chainCheck) addCheckpoint(cp memory.Checkpoint) string {
	v := c.Result()
	if !v.OK {
		return ""
	}
	switch {
	case cp.ID <= c.lastCheckpoint:
		return fmt.Sprintf("checkpoint %d follows checkpoint %d; checkpoint ids must increase", cp.ID, c.lastCheckpoint)
	case cp.LastEventID != v.HeadID:
		return fmt.Sprintf("checkpoint %d is anchored to event %d but follows event %d; an export writes each checkpoint right after the event it is anchored to", cp.ID, cp.LastEventID, v.HeadID)
	case cp.HeadHash != v.HeadHash:
		return fmt.Sprintf("checkpoint %d's head_hash is not the hash of event %d, the event it is anchored to", cp.ID, cp.LastEventID)
	}
	c.lastCheckpoint = cp.ID
	return ""
}

// VerifyJSONL checks the chain of an export offline, with Verify's answers:
// the events counted, the last good head, the first break and why. A line
// that is not an export line, or a checkpoint that Import would refuse, is
// a *LineError.
func VerifyJSONL(r io.Reader) (memory.Verification, error) {
	check := newChainCheck()
	err := readItems(r, func(line int, isEvent bool, e memory.Event, c memory.Checkpoint) error {
		if isEvent {
			check.Add(e)
		} else if reason := check.addCheckpoint(c); reason != "" {
			return &LineError{line, reason}
		}
		return nil
	})
	if err != nil {
		return memory.Verification{}, err
	}
	return check.Result(), nil
}

// ImportStats counts what Import wrote.
type ImportStats struct {
	Events, Checkpoints int64
}

// Import builds the memory of the database at path from an export: every
// row with its own id, ts, session and hash, so the new file's rows are
// identical to the exported ones. It verifies while it reads and writes
// everything, the server schema included, in one transaction, so a line
// that breaks the chain, or that is not an export line, leaves nothing
// behind (a *LineError says which line and why): a new file is built under
// a temporary name beside path and renamed when complete (refused, it is
// removed), an existing one is left as it was. A target that already holds
// events or checkpoints is refused (ErrTargetNotEmpty). The full-text index
// is built in the same transaction.
func Import(ctx context.Context, path string, r io.Reader, log hclog.Logger) (ImportStats, error) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return ImportStats{}, fmt.Errorf("portable: %w", err)
	}
	if _, err := os.Lstat(abs); !errors.Is(err, fs.ErrNotExist) {
		return importInto(ctx, abs, false, r, log)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return ImportStats{}, fmt.Errorf("portable: create database folder: %w", err)
	}
	// No SQLite connection of this process has the file: creating it
	// and closing the descriptor costs no lock.
	f, err := os.CreateTemp(filepath.Dir(abs), "."+filepath.Base(abs)+".import-*")
	if err != nil {
		return ImportStats{}, fmt.Errorf("portable: import: %w", err)
	}
	tmp := f.Name()
	f.Close()
	st, err := importInto(ctx, tmp, true, r, log)
	if err == nil {
		err = placeImport(tmp, abs)
	}
	if err != nil {
		for _, name := range []string{tmp, tmp + "-wal", tmp + "-shm", tmp + "-journal"} {
			_ = os.Remove(name)
		}
		return ImportStats{}, err
	}
	return st, nil
}

// placeImport renames the complete import tmp to path, which must still
// be free, after its connections closed (which folds the WAL into the file
// and removes it).
func placeImport(tmp, path string) error {
	for _, side := range []string{"-wal", "-shm"} {
		if fi, err := os.Stat(tmp + side); err == nil && fi.Size() > 0 && side == "-wal" {
			return fmt.Errorf("portable: import: %s is left beside the new database after its close; nothing was imported", tmp+side)
		}
		_ = os.Remove(tmp + side)
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("portable: import: %s appeared while the import ran; nothing was imported", path)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("portable: import: %w", err)
	}
	osfile.SyncDir(filepath.Dir(path))
	return nil
}

// importInto is Import into the database at path; fresh marks the
// temporary file Import made.
func importInto(ctx context.Context, path string, fresh bool, r io.Reader, log hclog.Logger) (ImportStats, error) {
	var st ImportStats
	b, err := memory.BeginBuild(ctx, path, fresh, log)
	if err != nil {
		return st, err
	}
	defer b.Close()
	check := newChainCheck()
	err = readItems(r, func(line int, isEvent bool, e memory.Event, c memory.Checkpoint) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if isEvent {
			if reason := check.Add(e); reason != "" {
				return &LineError{line, fmt.Sprintf("event %d breaks the chain: %s; nothing was imported", e.ID, reason)}
			}
			if err := b.AddEvent(ctx, e); err != nil {
				return &LineError{line, fmt.Sprintf("event %d: %v", e.ID, err)}
			}
			st.Events++
			return nil
		}
		if reason := check.addCheckpoint(c); reason != "" {
			return &LineError{line, reason + "; nothing was imported"}
		}
		if err := b.AddCheckpoint(ctx, c); err != nil {
			return &LineError{line, fmt.Sprintf("checkpoint %d: %v", c.ID, err)}
		}
		st.Checkpoints++
		return nil
	})
	if err != nil {
		return ImportStats{}, err
	}
	if err := b.Commit(ctx); err != nil {
		return ImportStats{}, err
	}
	return st, nil
}
