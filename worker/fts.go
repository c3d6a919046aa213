package worker

import (
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/policy"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

// checkFTSCommands refuses, in write_query, an INSERT that hands an FTS
// table a command that removes data (INSERT INTO f(f) VALUES('delete-all'))
// or one that is only computed while the statement runs. The authorizer
// reports such an INSERT like any other, so the compiled program is read
// (policy.CheckFTSCommands explains how).
func (ex *executor) checkFTSCommands(st *rawsqlite.Stmt) error {
	if ex.mode != policy.Write {
		return nil
	}
	var tables []policy.FTSTable
	for _, name := range ex.auth.InsertTargets() {
		t, ok, err := ex.ftsTable(name)
		if err != nil {
			return ex.uncheckable(err)
		}
		if ok {
			tables = append(tables, t)
		}
	}
	if len(tables) == 0 {
		return nil
	}
	ops, err := ex.program(st)
	if err != nil {
		return ex.uncheckable(err)
	}
	if v := policy.CheckFTSCommands(ex.mode, ops, tables); v != nil {
		return v
	}
	return nil
}

func (ex *executor) uncheckable(err error) error {
	return errcode.New(errcode.Policy, "the statement could not be checked: "+err.Error())
}

// ftsTable describes name when it is a virtual table with an FTS command
// column (a hidden column named like the table), and finds the handle its
// VUpdate shows in EXPLAIN by compiling, never running, an INSERT into it.
func (ex *executor) ftsTable(name string) (policy.FTSTable, bool, error) {
	t := policy.FTSTable{Name: name, Command: -1}
	var command string
	err := ex.each("SELECT cid, name, hidden FROM pragma_table_xinfo(?1)", func(st *rawsqlite.Stmt) error {
		t.Columns++
		if st.ColumnInt64(2) != 0 && rawsqlite.SameName(st.ColumnText(1), name) {
			t.Command, command = int(st.ColumnInt64(0)), st.ColumnText(1)
		}
		return nil
	}, name)
	if err != nil || t.Command < 0 {
		return t, false, err
	}
	err = ex.each("EXPLAIN INSERT INTO "+rawsqlite.QuoteIdent(name)+"("+rawsqlite.QuoteIdent(command)+") VALUES (NULL)", func(st *rawsqlite.Stmt) error {
		if st.ColumnText(1) == "VUpdate" {
			t.Vtab = st.ColumnText(5)
		}
		return nil
	})
	if err == nil && t.Vtab == "" {
		err = errNoVUpdate
	}
	return t, true, err
}

var errNoVUpdate = errcode.New(errcode.WorkerFailed, "no VUpdate in the program of an INSERT into a virtual table")
