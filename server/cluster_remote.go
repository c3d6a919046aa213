package server

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/cluster/rqlite"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/config"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/memory"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/render"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/snapshot"
)

// A front without a node beside it (--rqlite without --rqlite-data,
// docs/cluster.md "Without a local node") has no file of the cluster to
// read. It keeps, in a private temporary folder:
//
//   - a schema mirror: a SQLite file holding only the cluster's schema
//     (every object's CREATE statement, in the cluster's order), rebuilt in
//     place when the cluster's schema version moves, and stamped with that
//     version (PRAGMA schema_version), so that what a worker judges against
//     it carries the cluster's version into the write's schema guard. The
//     workers judge every statement there, as they would on a node's file;
//   - for the memory's own reads (get_resume_context, recall,
//     verify_chain), a copy of the whole database from the cluster's
//     backup, fetched again whenever the cluster's Raft index moved.
//
// A judged read is forwarded to the cluster at level linearizable, bounded
// by --query-timeout with rqlite's own db_timeout (the node interrupts it),
// and rendered here exactly as a worker renders it.
type remote struct {
	dir    string // the private folder
	mirror string // the schema mirror's file
	log    hclog.Logger

	// mu guards the mirror's rebuilds; db is this process's one
	// connection to it.
	mu      sync.Mutex
	db      *sql.DB
	version int64 // the cluster's schema version the mirror holds; -1: none

	// copyMu makes the memory's reads take turns over the one copy.
	copyMu    sync.Mutex
	copy      *memory.Store
	copyPath  string
	copyIndex uint64 // the highest applied Raft index seen before it was fetched
	copies    int
}

// mirrorName is the mirror's file name: its stem names the snapshots.
const mirrorName = "cluster.db"

// openRemote starts a front in cluster mode with no rqlite node beside it.
func (s *Server) openRemote(ctx context.Context) error {
	cfg := s.cfg
	if cfg.Snapshots > 0 && cfg.SnapshotDir == "" {
		return &config.UsageError{Msg: "without --rqlite-data, destructive_query's snapshots (a copy of the cluster's backup) need a folder\nTry: --snapshot-dir DIR, or --snapshots 0 to go without, or --rqlite-data DIR for the node beside this server"}
	}
	wait := cfg.QueryTimeout + clusterWaitSlack
	client, err := rqlite.New(cfg.RQLite, rqlite.Options{Timeout: wait, Failover: wait, DBTimeout: cfg.QueryTimeout, Log: s.log.Named("rqlite")})
	if err != nil {
		return &config.UsageError{Msg: fmt.Sprintf("--rqlite: %v", err)}
	}
	dir, err := os.MkdirTemp("", "mcp-sqlite-memory-remote-")
	if err != nil {
		return fmt.Errorf("a private folder for the schema mirror: %w", err)
	}
	s.closers = append(s.closers, removeDir(dir))
	r := &remote{dir: dir, mirror: filepath.Join(dir, mirrorName), log: s.log.Named("remote"), version: -1}
	cl := &cluster{client: client, log: s.log.Named("cluster"), remote: r, wait: wait}
	startCtx, cancel := context.WithTimeout(ctx, clusterStartWait)
	defer cancel()
	res, err := cl.schema(startCtx, s.model != nil)
	if err != nil {
		return fmt.Errorf("cluster %s: the memory's schema could not be written: %w\nstart the nodes (docs/cluster.md) and make sure a majority of them is up", strings.Join(cfg.RQLite, ","), err)
	}
	cl.written.Store(res)
	// The hold (takeHold) before this process's first connection to the
	// mirror: the workers' sandbox reads its header through it.
	if s.hold, err = takeHold(r.mirror, true, nil); err != nil {
		return fmt.Errorf("create the schema mirror %s: %w", r.mirror, err)
	}
	if r.db, err = sql.Open("sqlite", "file:"+r.mirror+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)"); err != nil {
		return err
	}
	r.db.SetMaxOpenConns(1)
	s.closers = append(s.closers, r)
	if err := r.refresh(startCtx, client); err != nil {
		return err
	}
	s.dbPath, s.cluster = r.mirror, cl
	s.auditor = newClusterAuditor(cl, s.log.Named("audit"))
	s.closers = append(s.closers, s.auditor.(*clusterAuditor))
	s.log.Info("cluster mode without a local node", "nodes", strings.Join(cfg.RQLite, ","), "schema_mirror", r.mirror)
	return nil
}

// Close closes the memory copy and the mirror's connection (the folder
// goes with the server's closers).
func (r *remote) Close() error {
	r.copyMu.Lock()
	if r.copy != nil {
		r.copy.Close()
		r.copy = nil
	}
	r.copyMu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.db != nil {
		return r.db.Close()
	}
	return nil
}

// schemaVersionSQL is the cluster's schema version.
const schemaVersionSQL = "SELECT schema_version FROM pragma_schema_version"

// refresh rebuilds the mirror when the cluster's schema version is not
// the one it holds (a linearizable read: a schema change acknowledged
// before it is seen).
func (r *remote) refresh(ctx context.Context, client *rqlite.Client) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for attempt := 0; attempt < 5; attempt++ {
		res, err := client.Query(ctx, []rqlite.Statement{
			{SQL: schemaVersionSQL},
			{SQL: "SELECT type, name, sql FROM sqlite_schema WHERE sql IS NOT NULL ORDER BY rowid"},
			{SQL: schemaVersionSQL},
		}, rqlite.Linearizable)
		if err != nil {
			return errcode.New(errcode.DatabaseUnavailable, fmt.Sprintf("the cluster's schema could not be read (%v); nothing was run. Try again in a few seconds: a new leader is elected by itself while a majority of the nodes is up", err))
		}
		before, after := firstInt(res.Results[0]), firstInt(res.Results[2])
		if before != after {
			continue // a schema change landed between the reads
		}
		if before == r.version {
			return nil
		}
		var objs []schemaObject
		for _, row := range res.Results[1].Values {
			var o schemaObject
			o.typ, _ = row[0].(string)
			o.name, _ = row[1].(string)
			o.sql, _ = row[2].(string)
			objs = append(objs, o)
		}
		if err := r.rebuild(ctx, objs, before); err != nil {
			return errcode.New(errcode.DatabaseUnavailable, fmt.Sprintf("this server's copy of the cluster's schema could not be rebuilt (%v); nothing was run", err))
		}
		r.log.Debug("schema mirror rebuilt", "schema_version", before, "objects", len(objs))
		r.version = before
		return nil
	}
	return errcode.New(errcode.DatabaseUnavailable, "the cluster's schema kept changing while this server read it; nothing was run. Call again")
}

func firstInt(rows rqlite.Rows) int64 {
	if len(rows.Values) == 0 || len(rows.Values[0]) == 0 {
		return -1
	}
	n, _ := rows.Values[0][0].(int64)
	return n
}

// schemaObject is one row of sqlite_schema.
type schemaObject struct{ typ, name, sql string }

// mirrored returns the objects the mirror creates: sqlite_* objects are
// SQLite's own, and a virtual table's shadow tables are made by its
// CREATE VIRTUAL TABLE.
func mirrored(objs []schemaObject) []schemaObject {
	virtual := map[string]bool{}
	for _, o := range objs {
		if o.typ == "table" && isVirtual(o.sql) {
			virtual[strings.ToLower(o.name)] = true
		}
	}
	var out []schemaObject
	for _, o := range objs {
		if o.sql == "" || strings.HasPrefix(strings.ToLower(o.name), "sqlite_") || (o.typ == "table" && isShadow(o.name, virtual)) {
			continue
		}
		out = append(out, o)
	}
	return out
}

func isVirtual(sql string) bool {
	f := strings.Fields(strings.ToUpper(sql))
	return len(f) >= 3 && f[0] == "CREATE" && f[1] == "VIRTUAL"
}

// shadowSuffixes are those of FTS5, FTS3/4 and R*Tree shadow tables.
var shadowSuffixes = []string{"_data", "_idx", "_docsize", "_config", "_content", "_segments", "_segdir", "_stat", "_node", "_parent", "_rowid"}

func isShadow(name string, virtual map[string]bool) bool {
	lower := strings.ToLower(name)
	for _, suffix := range shadowSuffixes {
		if base, ok := strings.CutSuffix(lower, suffix); ok && virtual[base] {
			return true
		}
	}
	return false
}

// rebuild replaces the mirror's schema with objs in one transaction and
// stamps it with the cluster's version: readers (workers) see the old
// schema or the new one, never a part.
func (r *remote) rebuild(ctx context.Context, objs []schemaObject, version int64) error {
	conn, err := r.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			_, _ = conn.ExecContext(context.Background(), "ROLLBACK")
		}
	}()
	rows, err := conn.QueryContext(ctx, "SELECT type, name, coalesce(sql, '') FROM sqlite_schema ORDER BY rowid")
	if err != nil {
		return err
	}
	var old []schemaObject
	for rows.Next() {
		var o schemaObject
		if err := rows.Scan(&o.typ, &o.name, &o.sql); err != nil {
			rows.Close()
			return err
		}
		old = append(old, o)
	}
	rows.Close()
	old = mirrored(old)
	// Triggers and views first, then indexes, then virtual tables (which
	// take their shadow tables), then the rest.
	for _, pass := range []func(schemaObject) bool{
		func(o schemaObject) bool { return o.typ == "trigger" || o.typ == "view" },
		func(o schemaObject) bool { return o.typ == "index" },
		func(o schemaObject) bool { return o.typ == "table" && isVirtual(o.sql) },
		func(o schemaObject) bool { return o.typ == "table" && !isVirtual(o.sql) },
	} {
		for _, o := range old {
			if pass(o) {
				if _, err := conn.ExecContext(ctx, "DROP "+strings.ToUpper(o.typ)+" IF EXISTS "+quoteIdent(o.name)); err != nil {
					return fmt.Errorf("drop %s %s: %w", o.typ, o.name, err)
				}
			}
		}
	}
	// In the cluster's order; what fails (an object naming one made
	// later, after a rename) is tried again once the rest exists. What
	// this SQLite cannot make at all (a virtual table module it lacks) is
	// left out with a warning: a statement naming it fails as "no such
	// table", every other call goes on.
	todo := mirrored(objs)
	for round := 0; len(todo) > 0; round++ {
		var failed []schemaObject
		var errs []string
		for _, o := range todo {
			if _, err := conn.ExecContext(ctx, o.sql); err != nil {
				failed, errs = append(failed, o), append(errs, fmt.Sprintf("%s %s: %v", o.typ, o.name, err))
			}
		}
		if len(failed) > 0 && (len(failed) == len(todo) || round > 3) {
			r.log.Warn("the schema mirror leaves out what it could not create", "objects", strings.Join(errs, "; "))
			break
		}
		todo = failed
	}
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA schema_version = %d", version)); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return err
	}
	done = true
	return nil
}

func quoteIdent(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// remoteAnswer answers the worker requests a front without a local node
// cannot send to a worker as they are. handled is false for the others
// (schema questions and judgements, which the mirror answers).
func (s *Server) remoteAnswer(c *call, req *ipc.Request) (out outcome, handled bool, err error) {
	switch {
	case req.Op == ipc.OpQuery && req.Mode == ipc.ModeRead && !req.Judge && req.Preview == nil:
		out, err = s.remoteRead(c, req)
		return out, true, err
	case req.Op == ipc.OpListTables && req.Table != nil && req.Table.RowCounts:
		// The mirror's tables are empty: no counts rather than zeros.
		t := *req.Table
		t.RowCounts = false
		req.Table = &t
		c.detail["row_counts"] = "not available without --rqlite-data"
	case req.Op == ipc.OpSearch:
		return outcome{}, true, errcode.New(errcode.DatabaseUnavailable, "search_text needs the rqlite node beside this server (--rqlite-data): it reads candidate rows in a worker. Without one, use read_query with instr(), LIKE or a full-text MATCH, or recall for the memory")
	}
	return outcome{}, false, nil
}

// remoteRead judges a read on the mirror in a worker, forwards the very
// text judged to the cluster (linearizable: it sees every acknowledged
// write) bounded by --query-timeout, and renders the rows as the worker
// does.
func (s *Server) remoteRead(c *call, req *ipc.Request) (outcome, error) {
	judge := *req
	judge.Judge, judge.Cluster = true, true
	resp, err := s.run(c, &judge)
	if err != nil {
		return outcome{}, err
	}
	j, err := resp.Judged()
	if err != nil {
		return outcome{}, err
	}
	timeout := s.cfg.QueryTimeout
	ctx, cancel := context.WithTimeout(c.ctx, timeout+5*time.Second)
	defer cancel()
	res, err := s.cluster.client.QueryWithin(ctx, []rqlite.Statement{{SQL: j.SQL}}, rqlite.Linearizable, timeout)
	if err != nil {
		var se *rqlite.StatementError
		switch {
		case errors.As(err, &se) && strings.Contains(se.Message, "query timeout"):
			return outcome{}, errcode.New(errcode.Timeout, fmt.Sprintf("query stopped after %s (the cluster's node interrupted it); narrow the query, add a LIMIT or an index", timeout))
		case errors.As(err, &se):
			return outcome{}, errcode.New(errcode.SQL, se.Message)
		case errors.Is(err, rqlite.ErrUnavailable), errors.Is(err, rqlite.ErrUnknownOutcome):
			return outcome{}, errcode.New(errcode.DatabaseUnavailable, fmt.Sprintf("the rqlite cluster did not answer the read (%v); nothing was read. Try again in a few seconds: a new leader is elected by itself while a majority of the nodes is up", err))
		}
		return outcome{}, clusterError(err)
	}
	text, js, rows := renderRows(req, res.Results[0])
	c.setRows(rows)
	return outcome{text: text, json: js}, nil
}

// renderRows renders rows as the worker renders a read (worker/query.go):
// the offset's rows skipped, the limit's page, the byte and cell caps.
func renderRows(req *ipc.Request, rows rqlite.Rows) (text string, js []byte, n int64) {
	limit := req.Limit
	if limit <= 0 {
		limit = 100
	}
	caps := render.Caps{Limit: limit, Offset: req.Offset, MaxRows: req.Caps.MaxRows, MaxBytes: req.Caps.MaxResultBytes, MaxCellChars: req.Caps.MaxCellChars}
	var csv *render.CSV
	var doc *render.JSON
	var add func([]render.Value) bool
	if req.Format == ipc.FormatJSON {
		doc = render.NewJSON(caps, rows.Columns)
		add = doc.Add
	} else {
		csv = render.NewCSV(caps, rows.Columns)
		add = csv.Add
	}
	more := false
	row := make([]render.Value, len(rows.Columns))
	values := rows.Values
	if req.Offset < len(values) {
		values = values[req.Offset:]
	} else {
		values = nil
	}
	for i, vals := range values {
		if i == limit {
			more = true
			break
		}
		for k := range row {
			var v any
			if k < len(vals) {
				v = vals[k]
			}
			row[k] = renderValue(v)
		}
		if !add(row) {
			break
		}
	}
	if doc != nil {
		out := doc.Finish(more)
		return string(out), out, int64(doc.Rows())
	}
	return string(csv.Finish(more)), nil, int64(csv.Rows())
}

// renderValue is one value as the client decoded it.
func renderValue(v any) render.Value {
	switch x := v.(type) {
	case nil:
		return render.Value{}
	case int64:
		return render.Value{Kind: render.Integer, Int: x}
	case float64:
		return render.Value{Kind: render.Real, Real: x}
	case string:
		return render.Value{Kind: render.Text, Text: x}
	case []byte:
		return render.Value{Kind: render.Blob, BlobLen: len(x)}
	case bool:
		if x {
			return render.Value{Kind: render.Integer, Int: 1}
		}
		return render.Value{Kind: render.Integer}
	}
	return render.Value{Kind: render.Text, Text: fmt.Sprint(v)}
}

// memoryReader is the store the memory's reads go through, and what to
// call when done: the server's own store, or without a local node the
// copy of the cluster's database (memoryCopy).
func (s *Server) memoryReader(ctx context.Context) (*memory.Store, func(), error) {
	if s.cluster == nil || s.cluster.remote == nil {
		return s.store, func() {}, nil
	}
	return s.cluster.remote.memoryCopy(ctx, s.cluster, s.embedder())
}

// memoryCopy returns the copy of the cluster's database the memory's
// reads use, fetched again (the whole database, GET /db/backup) when the
// cluster applied anything since the last one; the caller holds it until
// release.
func (r *remote) memoryCopy(ctx context.Context, cl *cluster, emb memory.Embedder) (*memory.Store, func(), error) {
	r.copyMu.Lock()
	release := r.copyMu.Unlock
	var applied uint64
	for _, node := range cl.client.Nodes() {
		if st, err := cl.client.Status(ctx, node); err == nil {
			applied = max(applied, st.AppliedIndex)
		}
	}
	if r.copy != nil && applied != 0 && applied <= r.copyIndex && cl.written.Load() <= r.copyIndex {
		return r.copy, release, nil
	}
	r.copies++
	path := filepath.Join(r.dir, fmt.Sprintf("memory-%d.db", r.copies))
	if err := fetchBackup(ctx, cl.client, path); err != nil {
		release()
		return nil, nil, errcode.New(errcode.DatabaseUnavailable, fmt.Sprintf("the memory could not be read from the cluster (its backup: %v); nothing was read. Try again in a few seconds", err))
	}
	store, err := memory.OpenNode(ctx, path, emb, memory.DefaultFusion, r.log.Named("memory"))
	if err != nil {
		os.Remove(path)
		release()
		return nil, nil, fmt.Errorf("open the copy of the cluster's database: %w", err)
	}
	if r.copy != nil {
		r.copy.Close()
		os.Remove(r.copyPath)
	}
	r.copy, r.copyPath, r.copyIndex = store, path, applied
	return store, release, nil
}

// fetchBackup writes the cluster's backup to a new file at path, switched
// to a rollback journal so that it reads as one file, read-only.
func fetchBackup(ctx context.Context, client *rqlite.Client, path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	err = client.Backup(ctx, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = deleteJournal(ctx, path)
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}

// deleteJournal sets the file's journal mode to DELETE (a backup may say
// WAL in its header, and a read-only connection cannot make its -shm).
func deleteJournal(ctx context.Context, path string) error {
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		return err
	}
	defer db.Close()
	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode = DELETE").Scan(&mode); err != nil {
		return err
	}
	return db.Close()
}

// remoteSnapshot is destructive_query's snapshot without a local node: the
// cluster's backup, kept in the snapshot folder under the snapshot naming
// and rotation.
func (s *Server) remoteSnapshot(c *call, want *ipc.Snapshot) (string, error) {
	if want.Keep <= 0 {
		return "; snapshots are disabled", nil
	}
	path, err := s.remoteSnapshotFile(c, want)
	if err != nil {
		return "", err
	}
	return "; snapshot: " + path + " (the cluster's backup before the statement)", nil
}

// remoteSnapshotFile writes the cluster's backup as a snapshot (the
// snapshot tool's too) and returns its path.
func (s *Server) remoteSnapshotFile(c *call, want *ipc.Snapshot) (string, error) {
	tmp, err := snapshot.NewPartial(want.Dir, want.Stem)
	if err != nil {
		return "", errcode.New(errcode.DatabaseUnavailable, "the snapshot before the statement could not be written, so the statement did not run: "+err.Error())
	}
	taken := time.Now()
	if err := fetchBackup(c.ctx, s.cluster.client, tmp); err != nil {
		return "", errcode.New(errcode.DatabaseUnavailable, fmt.Sprintf("the snapshot before the statement (the cluster's backup) was not written (%v), so the statement did not run. Try again", err))
	}
	path, err := snapshot.Keep(tmp, want.Dir, want.Stem, "", taken)
	if err != nil {
		os.Remove(tmp)
		return "", errcode.New(errcode.DatabaseUnavailable, "the snapshot before the statement was not kept, so the statement did not run: "+err.Error())
	}
	snapshot.Rotate(want.Dir, want.Stem, want.Keep, path, s.log)
	c.detail["snapshot"] = path
	return path, nil
}
