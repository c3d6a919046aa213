package server

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/audit"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/cluster/rqlite"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/memory"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/policy"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

// schemaAttempts bounds the re-checks of a write whose schema changed
// between its check and its execution (another front's DDL, or the local
// node behind the leader).
const schemaAttempts = 3

// clusterWrite runs an agent's writing statement in cluster mode: a worker
// judges it on the local node's file under the policy (it never runs it),
// then the very text judged goes to the cluster in one atomic request with
// the schema guard (the schema it was judged against), the update-rows
// guard and the call's audit row. A destructive statement is snapshotted
// from the local node's file first.
func (s *Server) clusterWrite(c *call, req *ipc.Request) (outcome, error) {
	var last error
	for attempt := 0; attempt < schemaAttempts; attempt++ {
		judge := *req
		judge.Judge, judge.Cluster, judge.Snapshot = true, true, nil
		resp, err := s.run(c, &judge)
		if err != nil {
			return outcome{}, err
		}
		j := resp.Judgement
		if j == nil {
			return outcome{}, errcode.New(errcode.WorkerFailed, "the worker did not judge the statement; the call did not complete")
		}
		if j.Reads {
			// A SELECT sent to a writing tool is answered as a read, on
			// the node's copy (Cluster: a worker refuses to write there).
			read := *req
			read.Snapshot, read.Cluster, read.Mode = nil, true, ipc.ModeRead
			resp, err := s.run(c, &read)
			if err != nil {
				return outcome{}, err
			}
			return outcome{text: resp.Text, json: resp.JSON}, nil
		}
		var snapNote string
		if req.Snapshot != nil {
			if snapNote, err = s.clusterSnapshot(c, req.Snapshot); err != nil {
				return outcome{}, err
			}
		}
		stmts := []rqlite.Statement{
			guard(memory.SchemaGuard(j.SchemaVersion)),
			{SQL: j.SQL},
			s.writeAuditRow(c, j.Schema),
		}
		if req.Mode == ipc.ModeWrite && j.UpdateGuard && s.cfg.MaxUpdateRows > 0 {
			stmts = append(stmts, rqlite.Statement{SQL: updateRowsGuardSQL, Args: []any{int64(s.cfg.MaxUpdateRows)}})
		}
		res, err := s.cluster.client.Execute(c.ctx, stmts)
		if err == nil {
			s.cluster.wroteAudited(res, 2)
			c.audited = true
			return outcome{text: writtenText(j, res.Results[1], snapNote)}, nil
		}
		var se *rqlite.StatementError
		if errors.As(err, &se) {
			switch se.Index {
			case 0:
				// The schema changed since the check: judge it again once
				// the local node has caught up with the leader.
				last = err
				if werr := s.cluster.catchUpLeader(c.ctx); werr != nil {
					return outcome{}, werr
				}
				continue
			case 1:
				if se.TimedOut() {
					return outcome{}, errcode.New(errcode.Timeout, fmt.Sprintf("the statement ran longer than --query-timeout=%s in the cluster and every node stopped it; nothing was changed. Narrow it (a WHERE clause, a LIMIT, a bound on a recursive CTE) or write in batches", s.cfg.QueryTimeout))
				}
				return outcome{}, errcode.New(errcode.SQL, se.Message+" (nothing was changed)")
			case 3:
				return outcome{}, errcode.New(errcode.Policy, fmt.Sprintf(
					"this UPDATE would change more than --max-update-rows=%d rows; it was rolled back and nothing changed. Narrow the WHERE clause, update in batches, or use destructive_query for a deliberate bulk update (it snapshots first)",
					s.cfg.MaxUpdateRows))
			}
		}
		return outcome{}, clusterError(err)
	}
	return outcome{}, errcode.New(errcode.SQL, fmt.Sprintf("the schema kept changing between this statement's check and its execution (%v); nothing ran. Call again", last))
}

// updateRowsGuardSQL fails the request when the agent's statement changed
// more rows than allowed: it reads the count the audit row (the statement
// just before it) recorded with changes().
const updateRowsGuardSQL = `INSERT OR REPLACE INTO ` + memory.TableClusterGuard + ` (k, ok) VALUES (2, (SELECT rows FROM query_log WHERE id = last_insert_rowid()) <= ?)`

// writeAuditRow is the audit row of a write, right after its statement:
// its rows are that statement's changes() on every node.
func (s *Server) writeAuditRow(c *call, schema bool) rqlite.Statement {
	if schema {
		return s.auditRow(c)
	}
	return guard(audit.ClusterInsertCounting(s.auditEntry(c.tool, c.start, c, nil)))
}

// writtenText is the answer to a write, in the words of the single-file
// server (SPEC 5.2).
func writtenText(j *ipc.Judgement, r rqlite.ExecStatement, snapNote string) string {
	var b strings.Builder
	if j.Schema {
		b.WriteString("ok: schema statement executed")
	} else {
		fmt.Fprintf(&b, "ok: %d rows affected", r.RowsAffected)
		if j.Inserts {
			fmt.Fprintf(&b, " (last_insert_rowid=%d)", r.LastInsertID)
		}
	}
	if j.Returning {
		// rqlite's execute answers counts only (docs/cluster.md).
		b.WriteString("; RETURNING rows are not returned in cluster mode: read them with read_query")
	}
	b.WriteString(snapNote)
	return b.String()
}

// clusterSnapshot copies the local node's file (caught up with this
// front's writes) into the snapshot folder before a destructive statement.
func (s *Server) clusterSnapshot(c *call, want *ipc.Snapshot) (string, error) {
	if s.cluster.remote != nil {
		return s.remoteSnapshot(c, want) // no local node: cluster_remote.go
	}
	if want.Keep <= 0 {
		return "; snapshots are disabled", nil
	}
	req := s.request(ipc.OpSnapshot, ipc.ModeRead)
	req.Snapshot = &ipc.Snapshot{Dir: want.Dir, Stem: want.Stem, Keep: want.Keep, Mode: ipc.SnapshotFull, Reason: want.Reason}
	resp, err := s.run(c, req)
	if err != nil {
		return "", err
	}
	path, _ := resp.Detail.Fields()["snapshot"].(string)
	if path == "" {
		return "", errcode.New(errcode.DatabaseUnavailable, "the snapshot before the statement was not written, so the statement did not run: "+resp.Text)
	}
	return "; snapshot: " + path + " (of this node's copy before the statement)", nil
}

// guard converts one memory statement.
func guard(st memory.Stmt) rqlite.Statement { return rqlite.Statement{SQL: st.SQL, Args: st.Args} }

// clusterCreateView is create_view in cluster mode: the SELECT is judged
// under the read policy by a worker, then the view's statement (as the
// single-file server stores it, policy.ViewSQL) goes to the cluster with
// the schema guard and the audit row; replace drops the old view in the
// same request.
func (s *Server) clusterCreateView(c *call, req *ipc.Request) (outcome, error) {
	v := req.View
	if v == nil || !policy.ValidViewName(v.Name) {
		return outcome{}, errcode.New(errcode.InvalidArgument, "name must match ^[A-Za-z_][A-Za-z0-9_]*$")
	}
	if policy.IsProtected(v.Name) {
		return outcome{}, errcode.New(errcode.Protected, v.Name+" is managed by the server; choose another view name")
	}
	judge := s.request(ipc.OpQuery, ipc.ModeRead)
	judge.SQL, judge.Judge, judge.Cluster = v.Select, true, true
	resp, err := s.run(c, judge)
	if err != nil {
		return outcome{}, err
	}
	j, err := resp.Judged()
	if err != nil {
		return outcome{}, err
	}
	prevType, prevSQL, err := s.cluster.object(c.ctx, v.Name)
	if err != nil {
		return outcome{}, clusterError(err)
	}
	switch {
	case prevType == "":
	case prevType != "view":
		return outcome{}, errcode.New(errcode.InvalidArgument, fmt.Sprintf("a %s named %s exists; choose another view name", prevType, v.Name))
	case !v.Replace:
		return outcome{}, errcode.New(errcode.InvalidArgument, fmt.Sprintf("view %s already exists; pass replace=true to replace it (the previous definition is kept in query_log)", v.Name))
	}
	stmts := []rqlite.Statement{guard(memory.SchemaGuard(j.SchemaVersion))}
	if prevType == "view" {
		c.detail["previous_sql"] = prevSQL
		stmts = append(stmts, rqlite.Statement{SQL: "DROP VIEW " + rawsqlite.QuoteIdent(v.Name)})
	}
	stmts = append(stmts, rqlite.Statement{SQL: policy.ViewSQL(v.Name, v.Description, j.SQL)}, s.auditRow(c))
	res, err := s.cluster.client.Execute(c.ctx, stmts)
	if err != nil {
		var se *rqlite.StatementError
		if errors.As(err, &se) && se.Index == 0 {
			return outcome{}, errcode.New(errcode.SQL, "the schema changed between the view's check and its creation (another agent's change); nothing ran. Call again")
		}
		return outcome{}, clusterError(err)
	}
	s.cluster.wroteAudited(res, len(stmts)-1)
	c.audited = true
	if prevType == "view" {
		return outcome{text: fmt.Sprintf("ok: view %s replaced; the previous definition is kept in query_log", v.Name)}, nil
	}
	return outcome{text: fmt.Sprintf("ok: view %s created", v.Name)}, nil
}
