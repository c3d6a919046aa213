package worker

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

// benchRows is the size of the table BenchmarkSearchThroughput scans.
const benchRows = 100_000

// searchBenchDB writes a table of benchRows rows with two text columns of
// log-like text (about 150 bytes a row) and returns its path and the bytes
// of candidate text.
func searchBenchDB(b *testing.B) (string, int64) {
	b.Helper()
	path := filepath.Join(b.TempDir(), "bench.db")
	c, err := rawsqlite.Open(path, rawsqlite.ReadWrite|rawsqlite.Create)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	for _, sql := range []string{
		"CREATE TABLE events (id INTEGER PRIMARY KEY, kind TEXT, content TEXT, n INTEGER)",
		`WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ` + strconv.Itoa(benchRows) + `)
		 INSERT INTO events (kind, content, n) SELECT
		   CASE x % 3 WHEN 0 THEN 'note' WHEN 1 THEN 'finding' ELSE 'decision' END,
		   printf('session %d: user %d looked at order %d, customer %d; status shipped, total %.2f EUR; see ticket T-%05d for the follow-up.', x / 50, x % 977, x, x % 5003, (x % 1000) * 1.37, x % 99991),
		   x
		 FROM c`,
	} {
		if err := c.Exec(sql); err != nil {
			b.Fatal(err)
		}
	}
	st, _, err := c.Prepare("SELECT sum(length(CAST(kind AS BLOB)) + length(CAST(content AS BLOB))) FROM events")
	if err != nil {
		b.Fatal(err)
	}
	defer st.Finalize()
	if _, err := st.Step(); err != nil {
		b.Fatal(err)
	}
	return path, st.ColumnInt64(0)
}

// BenchmarkSearchThroughput runs the worker's search path in this process
// (open, policy, candidate SELECT, matching, rendering; no process spawn)
// over 100k rows and reports MB/s of candidate text scanned.
//
//	go test -run '^$' -bench SearchThroughput -benchtime 10x ./worker/
func BenchmarkSearchThroughput(b *testing.B) {
	path, textBytes := searchBenchDB(b)
	cases := []struct {
		name, pattern string
		ignoreCase    bool
		fixed         bool
	}{
		{"literal", "T-04242", false, true},
		{"regex", `order \d+7, customer 4[0-9]{3}`, false, false},
		{"ignore_case", "STATUS SHIPPED, TOTAL 13", true, false},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			req := &ipc.Request{
				Version: ipc.Version, Op: ipc.OpSearch, Mode: "read", DB: path,
				Caps: ipc.Caps{MaxRows: 1000, MaxResultBytes: 32768, MaxCellChars: 2000},
				Search: &ipc.Search{
					Pattern: tc.pattern, Table: "events", IgnoreCase: tc.ignoreCase, FixedStrings: tc.fixed,
					Limit: 100, ContextChars: 80, CandidateCap: benchRows,
				},
			}
			b.SetBytes(textBytes)
			b.ReportAllocs()
			for b.Loop() {
				ex, err := open(req, hclog.NewNullLogger())
				if err != nil {
					b.Fatal(err)
				}
				resp, err := ex.search()
				ex.close()
				if err != nil {
					b.Fatal(err)
				}
				if !strings.Contains(resp.Text, "(100000 candidate rows x 2 columns scanned)") {
					b.Fatalf("unexpected result: %s", resp.Text[max(0, len(resp.Text)-200):])
				}
			}
		})
	}
}
