package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/cluster/rqlite"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
)

// TestCatchUp: a read in cluster mode goes ahead only when the local
// node applied this front's writes and knows a leader; otherwise it fails
// DATABASE_UNAVAILABLE after cl.wait, saying why.
func TestCatchUp(t *testing.T) {
	for _, tc := range []struct {
		name    string
		leader  string
		applied uint64
		down    bool
		want    string // "" for no error
	}{
		{"caught up", "n1", 10, false, ""},
		{"ahead", "n2", 12, false, ""},
		{"no leader", "", 10, false, "knows no leader"},
		{"behind", "n1", 9, false, "has applied Raft index 9 of this server's 10"},
		{"down", "", 0, true, "does not answer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprintf(w, `{"store":{"node_id":"n1","db_applied_index":%d,"leader":{"node_id":%q},"raft":{"state":"Follower"}}}`, tc.applied, tc.leader)
			}))
			t.Cleanup(node.Close)
			if tc.down {
				node.Close()
			}
			client, err := rqlite.New([]string{node.URL}, rqlite.Options{Timeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			cl := &cluster{client: client, local: node.URL, log: hclog.NewNullLogger(), wait: 300 * time.Millisecond}
			cl.wrote(10)
			began := time.Now()
			err = cl.catchUp(context.Background())
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("catchUp: %v", err)
			case tc.want == "":
				return
			case !errors.Is(err, errcode.DatabaseUnavailable) || !strings.Contains(err.Error(), tc.want):
				t.Fatalf("catchUp: %v, want DATABASE_UNAVAILABLE saying %q", err, tc.want)
			case time.Since(began) < cl.wait:
				t.Fatalf("catchUp gave up after %s, before its wait of %s", time.Since(began), cl.wait)
			}
		})
	}
}
