package tests

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/cluster/rqlitetest"
)

// loseAnswers stands in front of one rqlite node and, on demand, makes the
// next append's request end without an answer: the connection is closed
// after the request was sent, the front's client cannot know whether it
// was applied (an unknown outcome). apply says whether the request is
// passed to the node first (it lands) or dropped (it never does).
type loseAnswers struct {
	node  *url.URL
	proxy *httputil.ReverseProxy

	mu    sync.Mutex
	armed int  // appends whose answer to lose
	apply bool // pass them to the node before closing
	lost  int
}

func (l *loseAnswers) arm(n int, apply bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.armed, l.apply = n, apply
}

func (l *loseAnswers) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/db/execute" {
		l.proxy.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	l.mu.Lock()
	lose := l.armed > 0 && bytes.Contains(body, []byte("INSERT INTO memory_events"))
	apply := l.apply
	if lose {
		l.armed--
		l.lost++
	}
	l.mu.Unlock()
	if !lose {
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		l.proxy.ServeHTTP(w, r)
		return
	}
	if apply {
		target := *l.node
		target.Path, target.RawQuery = r.URL.Path, r.URL.RawQuery
		resp, err := http.Post(target.String(), r.Header.Get("Content-Type"), bytes.NewReader(body))
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	// The request was read in full: closing now is a lost answer.
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		conn.Close()
	}
}

// TestClusterAppendUnknownOutcome: an append whose answer is lost after
// the request reached the cluster is found by its hash and answered ok,
// never appended twice; one whose request never arrived is appended
// again, once. The front's only route to the cluster at first is a proxy
// that loses the answers; the other nodes are listed after it.
func TestClusterAppendUnknownOutcome(t *testing.T) {
	t.Parallel()
	cl := rqlitetest.Start(t, 3)
	node, err := url.Parse(cl.URL(0))
	if err != nil {
		t.Fatal(err)
	}
	lose := &loseAnswers{node: node, proxy: httputil.NewSingleHostReverseProxy(node)}
	proxy := httptest.NewServer(lose)
	t.Cleanup(proxy.Close)

	urls := append([]string{proxy.URL}, cl.URLs()[1:]...)
	args := []string{"--rqlite", strings.Join(urls, ","), "--rqlite-data", cl.DataDir(0)}
	s := startFrontArgs(t, cl, 0, args)

	s.ok("append_event", map[string]any{"content": "before"})
	lose.arm(1, true)
	s.ok("append_event", map[string]any{"content": "landed, answer lost"})
	lose.arm(1, false)
	s.ok("append_event", map[string]any{"content": "never arrived, sent again"})
	s.ok("append_event", map[string]any{"content": "after"})
	if lose.lost != 2 {
		t.Fatalf("the proxy lost %d answers, want 2 (did the appends go through it?)", lose.lost)
	}

	got := sameOnEveryNode(t, cl, []int{0, 1, 2}, "SELECT id, content FROM memory_events ORDER BY id")
	want := "1 before\n2 landed, answer lost\n3 never arrived, sent again\n4 after\n"
	if got != want {
		t.Fatalf("the chain holds\n%s\nwant\n%s", got, want)
	}
	verified(t, s, 4)
	out, err := exec.Command(serverBin, "verify", "--rqlite", strings.Join(cl.URLs(), ",")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"events": 4`) {
		t.Fatalf("verify --rqlite: %v\n%s", err, out)
	}
}
