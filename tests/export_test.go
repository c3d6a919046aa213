package tests

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// exportFlags raise the caps so that one read_query returns a whole table.
var exportFlags = []string{"--max-rows", "100000", "--default-limit", "100000", "--max-result-bytes", "1073741824", "--query-timeout", "60"}

// A result large enough to be spliced into the output by the front
// (server/result.go) reaches the host byte for byte as mcp-go itself would
// have written it: the line read from the server's stdout equals mcp-go's
// encoding of the text that the call command (an in-process client, where
// nothing is spliced) gets for the same statement. The rows hold everything
// JSON escapes.
func TestBulkExportWire(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	s := start(t, db)
	s.ok("write_query", q("CREATE TABLE odd (id INTEGER PRIMARY KEY, t TEXT, r REAL, b BLOB)"))
	s.ok("write_query", q(`WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 5000)
		INSERT INTO odd SELECT x,
			CASE x % 4 WHEN 0 THEN NULL WHEN 1 THEN '' ELSE 'a<b>&c "q" \ ' || x || char(8232) || 'é😀' || char(10) || 'tab' || char(9) || char(1) END,
			x / 3.0, CASE WHEN x % 7 = 0 THEN randomblob(4) END FROM c`))
	const query = "SELECT id, t, r, b FROM odd ORDER BY id"
	args := map[string]any{"query": query, "limit": 100000}
	argsJSON, _ := json.Marshal(args)
	out, err := exec.Command(serverBin, append(append([]string{"call", "--db", db}, exportFlags...), "read_query", string(argsJSON))...).Output()
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	text := strings.TrimSuffix(string(out), "\n")
	if len(text) < 128<<10 || !strings.HasSuffix(text, "# 5000 rows") {
		t.Fatalf("call gave %d bytes ending %q; want a bulk result", len(text), text[max(0, len(text)-40):])
	}
	want, err := json.Marshal(mcp.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(int64(2)), Result: mcp.NewToolResultText(text)})
	if err != nil {
		t.Fatal(err)
	}
	raw := startRaw(t, db, exportFlags...)
	got := raw.call(2, "read_query", args)
	if got != string(want)+"\n" {
		at := 0
		for at < min(len(got), len(want)) && got[at] == want[at] {
			at++
		}
		t.Fatalf("the wire differs at byte %d of %d:\n got %.120q\nwant %.120q", at, len(want), got[at:], want[at:])
	}
	// The next, small result takes mcp-go's own path on the same stream.
	if line := raw.call(3, "read_query", map[string]any{"query": "SELECT count(*) FROM odd"}); !strings.Contains(line, `"text":"count(*)\n5000\n# 1 rows"`) {
		t.Fatalf("small result after a bulk one: %s", line)
	}
}

// processCPU is the CPU time (user and system) a process has used, with
// that of its children it has waited for: for the server, its own and its
// finished workers'. Linux only; elsewhere 0.
func processCPU(pid int) time.Duration {
	if runtime.GOOS != "linux" {
		return 0
	}
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	// Fields after "(comm) ": state is 0; utime, stime, cutime, cstime are
	// 11 to 14, in clock ticks (100 a second on Linux).
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	var ticks int64
	for _, i := range []int{11, 12, 13, 14} {
		n, _ := strconv.ParseInt(f[i], 10, 64)
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// childCPU is the CPU time a finished command used.
func childCPU(cmd *exec.Cmd) time.Duration {
	if cmd.ProcessState == nil {
		return 0
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

func msPer(d time.Duration, n int) float64 {
	return float64(d.Microseconds()) / 1000 / float64(n)
}
