package rqlite_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/cluster/rqlite"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/cluster/rqlitetest"
)

// TestClusterQueryWithin: rqlite's db_timeout stops a runaway read inside
// the node (SQLite's interrupt) and answers an error; the cluster reads on.
func TestClusterQueryWithin(t *testing.T) {
	c := rqlitetest.Start(t, 3)
	ctx := ctxFor(t, 90*time.Second)
	runaway := []rqlite.Statement{{SQL: "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r"}}
	_, err := c.Client().QueryWithin(ctx, runaway, rqlite.Linearizable, 300*time.Millisecond)
	var se *rqlite.StatementError
	if !errors.As(err, &se) {
		t.Fatalf("a runaway read with db_timeout answered %v, want a statement error", err)
	}
	if !strings.Contains(se.Message, "timeout") {
		t.Fatalf("rqlite answered %q, want its query timeout", se.Message)
	}
	if ctx.Err() != nil {
		t.Fatal("the read ran until the test's own deadline")
	}
	res, err := c.Client().QueryWithin(ctx, []rqlite.Statement{{SQL: "SELECT 1 + 1"}}, rqlite.Linearizable, 5*time.Second)
	if err != nil || len(res.Results[0].Values) != 1 || res.Results[0].Values[0][0] != int64(2) {
		t.Fatalf("a read after it: %v %v", res, err)
	}
}
