package worker

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/policy"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

// ViewName is the shape of a view name create_view accepts.
var ViewName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ViewSQL is the statement create_view stores: the description lives in the
// view's own SQL, so get_schema shows it to the next session.
func ViewSQL(name, description, selectSQL string) string {
	var b strings.Builder
	b.WriteString("CREATE VIEW " + quoteIdent(name) + " AS\n")
	if d := strings.Join(strings.Fields(description), " "); d != "" {
		b.WriteString("-- description: " + d + "\n")
	}
	b.WriteString(selectSQL)
	return b.String()
}

// createView compiles the SELECT under the read policy first, then stores it.
func (ex *executor) createView() (*ipc.Response, error) {
	v := ex.req.View
	if v == nil || !ViewName.MatchString(v.Name) {
		return nil, ipc.NewError(ipc.CodeInvalidArgument, "name must match ^[A-Za-z_][A-Za-z0-9_]*$")
	}
	if policy.IsProtected(v.Name) {
		return nil, ipc.NewError(ipc.CodeProtected, v.Name+" is managed by the server; choose another view name")
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
		return nil, ipc.NewError(ipc.CodeInvalidArgument, fmt.Sprintf("a %s named %s exists; choose another view name", prevType, v.Name))
	case !v.Replace:
		return nil, ipc.NewError(ipc.CodeInvalidArgument, fmt.Sprintf("view %s already exists; pass replace=true to replace it (the previous definition is kept in query_log)", v.Name))
	}

	if err := ex.exec("BEGIN IMMEDIATE"); err != nil {
		return nil, err
	}
	committed := false
	defer func() {
		if !committed {
			_ = ex.exec("ROLLBACK")
		}
	}()
	if prevType == "view" {
		if err := ex.exec("DROP VIEW " + quoteIdent(v.Name)); err != nil {
			return nil, err
		}
	}
	st, _, err := ex.compile(ViewSQL(v.Name, v.Description, selectSQL))
	if err != nil {
		return nil, err
	}
	defer st.Finalize()
	if _, err := ex.stepAgent(st); err != nil {
		return nil, err
	}
	if err := ex.exec("COMMIT"); err != nil {
		return nil, err
	}
	committed = true
	if prevType == "view" {
		return &ipc.Response{
			Text:   fmt.Sprintf("ok: view %s replaced; the previous definition is kept in query_log", v.Name),
			Detail: map[string]any{"previous_sql": prevSQL},
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
		return "", ipc.NewError(ipc.CodeInvalidArgument, "select_sql must be one SELECT (or WITH ... SELECT) statement")
	}
	text = strings.TrimSpace(strings.TrimRight(strings.TrimSpace(text), ";"))
	return text, nil
}
