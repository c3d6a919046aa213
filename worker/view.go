package worker

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/policy"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

// createView compiles the SELECT under the read policy first, then stores it.
func (ex *executor) createView() (*ipc.Response, error) {
	v := ex.req.View
	if v == nil || !policy.ValidViewName(v.Name) {
		return nil, errcode.New(errcode.InvalidArgument, "name must match ^[A-Za-z_][A-Za-z0-9_]*$")
	}
	if policy.IsProtected(v.Name) {
		return nil, errcode.New(errcode.Protected, v.Name+" is managed by the server; choose another view name")
	}
	selectSQL, err := ex.checkedSelect(v.Select)
	if err != nil {
		return nil, err
	}

	var prevType, prevSQL string
	err = ex.each("SELECT type, coalesce(sql, '') FROM sqlite_schema WHERE name = ?1 COLLATE NOCASE", func(st *rawsqlite.Stmt) error {
		prevType, prevSQL = st.ColumnText(0), st.ColumnText(1)
		return nil
	}, v.Name)
	if err != nil {
		return nil, err
	}
	switch {
	case prevType == "":
	case prevType != "view":
		return nil, errcode.New(errcode.InvalidArgument, fmt.Sprintf("a %s named %s exists; choose another view name", prevType, v.Name))
	case !v.Replace:
		return nil, errcode.New(errcode.InvalidArgument, fmt.Sprintf("view %s already exists; pass replace=true to replace it (the previous definition is kept in query_log)", v.Name))
	}

	tx, err := ex.conn.BeginImmediate()
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	if prevType == "view" {
		if err := ex.exec("DROP VIEW " + rawsqlite.QuoteIdent(v.Name)); err != nil {
			return nil, err
		}
	}
	st, _, err := ex.compile(policy.ViewSQL(v.Name, v.Description, selectSQL))
	if err != nil {
		return nil, err
	}
	defer st.Finalize()
	if _, err := ex.stepAgent(st); err != nil {
		return nil, err
	}
	if err := ex.readBack(v.Name); err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	if prevType == "view" {
		return &ipc.Response{
			Text:   fmt.Sprintf("ok: view %s replaced; the previous definition is kept in query_log", v.Name),
			Detail: &ipc.Detail{PreviousSQL: prevSQL},
		}, nil
	}
	return &ipc.Response{Text: fmt.Sprintf("ok: view %s created", v.Name)}, nil
}

// checkedSelect compiles sql under the read policy as one read-only
// statement with result columns and returns its text without a trailing ';'.
func (ex *executor) checkedSelect(sql string) (string, error) {
	saved := ex.auth
	ex.auth = policy.New(policy.Read, policy.Options{})
	defer func() { ex.auth = saved }()
	st, text, err := ex.compile(sql)
	if err != nil {
		return "", err
	}
	defer st.Finalize()
	if !st.Readonly() || st.ColumnCount() == 0 || st.IsExplain() != 0 {
		return "", errcode.New(errcode.InvalidArgument, "select_sql must be one SELECT (or WITH ... SELECT) statement")
	}
	text = strings.TrimSpace(strings.TrimRight(strings.TrimSpace(text), ";"))
	if endsInOpenComment(text) {
		// SQLite would store the open comment as the end of the view, and
		// no statement could follow it in get_schema's output.
		return "", errcode.New(errcode.InvalidArgument, "select_sql ends inside a /* comment that is never closed; close it with */ or remove it")
	}
	return text, nil
}

// readBack compiles a read of the view just created, under the read policy
// as read_query would, before create_view commits: a view SQLite will not
// read is refused instead of stored. With trusted_schema=OFF (a worker
// backstop), a view may only use functions and virtual tables marked
// innocuous: pragma_* table-valued functions, rtreecheck() and the like
// work in read_query but not inside a view.
func (ex *executor) readBack(name string) error {
	saved := ex.auth
	ex.auth = policy.New(policy.Read, policy.Options{})
	defer func() { ex.auth = saved }()
	st, _, err := ex.compile("SELECT * FROM " + rawsqlite.QuoteIdent(name))
	if err == nil {
		st.Finalize()
		return nil
	}
	var coded *errcode.Error
	if errors.As(err, &coded) && coded.Code != errcode.SQL {
		return err
	}
	msg := err.Error()
	if coded != nil {
		msg = coded.Message
	}
	why := ""
	if strings.Contains(msg, "unsafe use of") {
		why = " (the server runs SQLite with trusted_schema=OFF: a view may not use pragma_* table-valued functions, or functions and virtual tables that are not marked innocuous, such as rtreecheck(); full-text MATCH, bm25(), highlight() and snippet() are fine)"
	}
	return errcode.New(errcode.InvalidArgument, fmt.Sprintf(
		"select_sql runs on its own but SQLite would not read it as a view: %s%s; nothing was stored. Run this SELECT with read_query instead, or save a view without it", msg, why))
}

// endsInOpenComment reports SQL whose end lies inside a /* comment that
// never closes (a -- comment ends at a line break, a /* comment does not).
func endsInOpenComment(sql string) bool {
	return !rawsqlite.Complete(sql+"\n;") && rawsqlite.Complete(sql+"*/;")
}
