// Package rqlitetest starts real rqlite clusters on loopback for tests of
// cluster mode (SPEC 13): n rqlited processes with the node settings of
// docs/cluster.md, each in its own data directory under t.TempDir(), killed
// and restarted at will, stopped when the test ends.
//
// It runs rqlited v8.43.4 from $MCP_SQLITE_RQLITED, else from the cache
// folder scripts/rqlite.sh builds it into. Without it a test skips, saying
// the one command that gets it, unless MCP_SQLITE_REQUIRE_RQLITE=1 (as
// .ci/run sets), where it fails. Linux only: elsewhere the test skips.
//
// Only tests import it.
package rqlitetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/cluster/rqlite"
)

// Version is the rqlite release the tests run (scripts/rqlite.sh builds it).
const Version = "v8.43.4"

// StartTimeout bounds the wait for a leader after Start and Restart.
var StartTimeout = 30 * time.Second

// Cluster is a running loopback cluster of rqlited processes.
type Cluster struct {
	t      testing.TB
	bin    string
	client *rqlite.Client
	nodes  []*node
	// StartTook is how long Start waited for every node to know the leader.
	StartTook time.Duration
}

type node struct {
	id       string
	httpAddr string
	raftAddr string
	dataDir  string
	logPath  string
	args     []string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// Binary returns the path of rqlited, or skips (fails when
// MCP_SQLITE_REQUIRE_RQLITE=1) when there is none.
func Binary(t testing.TB) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("rqlitetest: the cluster tests run on Linux only")
	}
	path := os.Getenv("MCP_SQLITE_RQLITED")
	if path == "" {
		cache := os.Getenv("XDG_CACHE_HOME")
		if cache == "" {
			home, _ := os.UserHomeDir()
			cache = filepath.Join(home, ".cache")
		}
		path = filepath.Join(cache, "mcp-sqlite-memory", "rqlite-"+Version, "rqlited")
	}
	if fi, err := os.Stat(path); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
		return path
	}
	msg := fmt.Sprintf("no rqlited at %s: run `bash scripts/rqlite.sh` (builds rqlite %s once into a cache folder, about 5 minutes), or set MCP_SQLITE_RQLITED", path, Version)
	if os.Getenv("MCP_SQLITE_REQUIRE_RQLITE") == "1" {
		t.Fatal(msg + " (MCP_SQLITE_REQUIRE_RQLITE=1 forbids the skip)")
	}
	t.Skip(msg)
	return ""
}

// Start starts n nodes, waits (bounded by StartTimeout) until every node
// knows one leader, and stops them all when the test ends. Node logs are
// printed only if the test failed.
func Start(t testing.TB, n int) *Cluster {
	t.Helper()
	bin := Binary(t)
	if n < 1 {
		t.Fatalf("rqlitetest: a cluster of %d nodes", n)
	}
	dir := t.TempDir()
	ports := freePorts(t, 2*n)
	c := &Cluster{t: t, bin: bin}
	var join []string
	for i := range n {
		nd := &node{
			id:       "n" + strconv.Itoa(i+1),
			httpAddr: "127.0.0.1:" + strconv.Itoa(ports[2*i]),
			raftAddr: "127.0.0.1:" + strconv.Itoa(ports[2*i+1]),
			dataDir:  filepath.Join(dir, "n"+strconv.Itoa(i+1)),
			logPath:  filepath.Join(dir, "n"+strconv.Itoa(i+1)+".log"),
		}
		join = append(join, nd.raftAddr)
		c.nodes = append(c.nodes, nd)
	}
	for _, nd := range c.nodes {
		nd.args = NodeArgs(nd.id, nd.httpAddr, nd.raftAddr, join, nd.dataDir)
	}
	client, err := rqlite.New(c.URLs(), rqlite.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c.client = client
	t.Cleanup(c.stop)
	start := time.Now()
	for i := range c.nodes {
		c.startNode(i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	if err := c.waitAgreed(ctx, nil); err != nil {
		t.Fatalf("rqlitetest: %d nodes started, no leader every node knows after %s: %v", n, StartTimeout, err)
	}
	c.StartTook = time.Since(start)
	return c
}

// NodeArgs are rqlited's arguments for one node of a cluster whose nodes
// have the Raft addresses join (docs/cluster.md explains each).
func NodeArgs(id, httpAddr, raftAddr string, join []string, dataDir string) []string {
	args := []string{
		"-node-id", id,
		"-http-addr", httpAddr,
		"-raft-addr", raftAddr,
		// Node-local maintenance would make the nodes' files differ.
		"-auto-optimize-int", "0h",
		"-auto-vacuum-int", "0h",
	}
	if len(join) > 1 {
		args = append(args, "-bootstrap-expect", strconv.Itoa(len(join)), "-join", strings.Join(join, ","))
	}
	return append(args, dataDir)
}

// freePorts returns n distinct loopback ports nothing listened on a moment
// ago.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("rqlitetest: a free port: %v", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

func (c *Cluster) startNode(i int) {
	c.t.Helper()
	nd := c.nodes[i]
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if nd.cmd != nil {
		c.t.Fatalf("rqlitetest: node %d is running", i)
	}
	logf, err := os.OpenFile(nd.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	fmt.Fprintf(logf, "=== rqlited %s\n", strings.Join(nd.args, " "))
	cmd := exec.Command(c.bin, nd.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		c.t.Fatalf("rqlitetest: starting node %d: %v", i, err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		logf.Close()
		close(done)
	}()
	nd.cmd, nd.done = cmd, done
}

// URLs are the nodes' base URLs, in order.
func (c *Cluster) URLs() []string {
	var urls []string
	for _, nd := range c.nodes {
		urls = append(urls, "http://"+nd.httpAddr)
	}
	return urls
}

// URL is node i's base URL.
func (c *Cluster) URL(i int) string { return "http://" + c.nodes[i].httpAddr }

// DataDir is node i's data directory; its SQLite file is db.sqlite there.
func (c *Cluster) DataDir(i int) string { return c.nodes[i].dataDir }

// Client is a client of every node, for tests to inspect the cluster.
func (c *Cluster) Client() *rqlite.Client { return c.client }

// Kill kills node i with SIGKILL and waits until it is gone.
func (c *Cluster) Kill(i int) {
	c.t.Helper()
	nd := c.nodes[i]
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if nd.cmd == nil {
		c.t.Fatalf("rqlitetest: node %d is not running", i)
	}
	nd.cmd.Process.Kill()
	<-nd.done
	nd.cmd = nil
}

// Restart starts node i again, with the same data directory and ports (it
// rejoins from its own Raft state), and waits until it knows the leader.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	c.startNode(i)
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	for {
		st, err := c.client.Status(ctx, c.URL(i))
		if err == nil && st.LeaderID != "" {
			return
		}
		select {
		case <-ctx.Done():
			c.t.Fatalf("rqlitetest: node %d restarted and knows no leader after %s: %v", i, StartTimeout, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Running says whether node i runs.
func (c *Cluster) Running(i int) bool {
	nd := c.nodes[i]
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return nd.cmd != nil
}

// errExited: a node ended by itself; waiting longer is no use.
var errExited = errors.New("exited")

// exited says whether node i, started and not killed, has ended.
func (c *Cluster) exited(i int) bool {
	nd := c.nodes[i]
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if nd.cmd == nil {
		return false
	}
	select {
	case <-nd.done:
		return true
	default:
		return false
	}
}

// Leader returns the index of the running node that says it is the leader,
// or -1.
func (c *Cluster) Leader() int {
	for i := range c.nodes {
		if !c.Running(i) {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		st, err := c.client.Status(ctx, c.URL(i))
		cancel()
		if err == nil && st.RaftState == "Leader" {
			return i
		}
	}
	return -1
}

// WaitLeader waits until every running node knows one leader that is
// among them, and returns its index.
func (c *Cluster) WaitLeader(ctx context.Context) (int, error) {
	var leader int
	err := c.waitAgreed(ctx, &leader)
	return leader, err
}

// waitAgreed polls until every running node names the same leader, a
// running node that says it leads.
func (c *Cluster) waitAgreed(ctx context.Context, leader *int) error {
	var last error
	for {
		i, err := c.agreed(ctx)
		if err == nil {
			if leader != nil {
				*leader = i
			}
			return nil
		}
		if errors.Is(err, errExited) {
			return err
		}
		last = err
		select {
		case <-ctx.Done():
			return last
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (c *Cluster) agreed(ctx context.Context) (int, error) {
	leaderID, leader := "", -1
	for i, nd := range c.nodes {
		if !c.Running(i) {
			continue
		}
		if c.exited(i) {
			return -1, fmt.Errorf("node %s %w (a port taken? see its log, printed below)", nd.id, errExited)
		}
		st, err := c.client.Status(ctx, c.URL(i))
		if err != nil {
			return -1, err
		}
		if st.LeaderID == "" {
			return -1, fmt.Errorf("node %s knows no leader", nd.id)
		}
		if leaderID != "" && st.LeaderID != leaderID {
			return -1, fmt.Errorf("nodes disagree on the leader: %s and %s", leaderID, st.LeaderID)
		}
		leaderID = st.LeaderID
		if st.RaftState == "Leader" {
			leader = i
		}
	}
	if leader < 0 {
		return -1, errors.New("no running node leads")
	}
	return leader, nil
}

// stop kills every node and, if the test failed, prints their logs.
func (c *Cluster) stop() {
	for i := range c.nodes {
		if c.Running(i) {
			c.Kill(i)
		}
	}
	if !c.t.Failed() {
		return
	}
	for _, nd := range c.nodes {
		b, err := os.ReadFile(nd.logPath)
		if err != nil {
			continue
		}
		if len(b) > 16<<10 {
			b = append([]byte("...\n"), b[len(b)-16<<10:]...)
		}
		c.t.Logf("rqlited %s (%s, raft %s) log:\n%s", nd.id, nd.httpAddr, nd.raftAddr, bytes.TrimSpace(b))
	}
}
