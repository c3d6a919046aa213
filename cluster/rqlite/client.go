// Package rqlite is cluster mode's small client of rqlite's v8 HTTP API
// (SPEC 13): writes as one atomic request, reads at a chosen consistency
// level, a node's applied Raft index, backup and load. It speaks the API
// with net/http and encoding/json only; the project does not import rqlite.
//
// # Writes
//
// [Client.Execute] always sends ?transaction&noparse&norwrandom&norwtime&raft_index:
// all statements are one Raft entry and one SQLite transaction, rqlite runs
// the text exactly as given (it rewrites neither random() nor 'now'), and
// the answer carries the entry's Raft index for read-your-writes
// ([Client.WaitApplied]). It never uses queued writes, which rqlite
// acknowledges before they are committed.
//
// # Failover
//
// A request goes to the node that last answered (first the first node).
// When a node cannot be reached before the request was written, or answers
// that it has no leader (503, "leader not found", "not leader"), the next
// node is tried, round after round with a growing pause, until the
// context's deadline (or [Options.Failover]). Failures read as
// [ErrUnavailable]. A write that may have reached the cluster but got no
// answer (a timeout or a lost connection after the request was written) is
// never sent again: it fails with [ErrUnknownOutcome], and the caller must
// find out whether it took effect before retrying.
//
// # Values
//
// Arguments are int, int64 (and the other integer types), float64, string,
// []byte, bool and nil. Rows decode JSON numbers exactly: integral numbers
// are int64 unless the column has REAL affinity, others float64; BLOBs are
// asked for as byte arrays (blob_array) and come back as []byte, so text
// is never mistaken for base64. docs/cluster.md lists what rqlite's reads
// cannot give back faithfully.
package rqlite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Options tune a Client; the zero value is usable.
type Options struct {
	// Timeout bounds one HTTP request to one node (default 10 s). It
	// should exceed rqlite's apply timeout (10 s by default) for writes
	// during an election to be answered rather than left unknown.
	Timeout time.Duration
	// Failover bounds how long a call keeps trying nodes when its context
	// has no earlier deadline (default 15 s).
	Failover time.Duration
	// HTTP is the client requests go through (default: one of the
	// package's own, with a 2 s connect timeout).
	HTTP *http.Client
	// Log receives a debug line per failed attempt (default: none).
	Log hclog.Logger
	// DBTimeout, when set, is sent with every Execute as rqlite's
	// db_timeout: each node interrupts a statement of the request that
	// runs longer and rolls the whole request back. It travels in the
	// Raft entry, so every node applies the same bound; without it a
	// write that never ends blocks every node's apply for good
	// (docs/cluster.md, "A runaway write").
	DBTimeout time.Duration
}

// Defaults of Options.
const (
	DefaultTimeout  = 10 * time.Second
	DefaultFailover = 15 * time.Second
)

// Pauses between rounds over the nodes: short first (an election on
// loopback takes about 1.5 s), growing to a cap. Variables so tests can
// shorten them.
var (
	firstPause = 5 * time.Millisecond
	maxPause   = 250 * time.Millisecond
)

// Client talks to one rqlite cluster through any of its nodes. It is safe
// for concurrent use.
type Client struct {
	nodes    []string // base URLs without a trailing slash
	timeout  time.Duration
	failover time.Duration
	http     *http.Client
	log      hclog.Logger
	// executePath is executeBase with the db_timeout, if any.
	executePath string
	// preferred is the index of the last node that answered.
	preferred atomic.Int32
}

// New returns a client of the cluster reached through nodes, each a base
// URL ("http://127.0.0.1:4001") or host:port.
func New(nodes []string, opt Options) (*Client, error) {
	if len(nodes) == 0 {
		return nil, errors.New("rqlite: no node address given: pass at least one, as http://HOST:PORT or HOST:PORT")
	}
	c := &Client{timeout: opt.Timeout, failover: opt.Failover, http: opt.HTTP, log: opt.Log, executePath: executeBase}
	if opt.DBTimeout > 0 {
		c.executePath += "&db_timeout=" + opt.DBTimeout.String()
	}
	seen := map[string]bool{}
	for _, n := range nodes {
		u, err := NodeURL(n)
		if err != nil {
			return nil, err
		}
		if seen[u] {
			return nil, fmt.Errorf("rqlite: node %q is given twice: list each node once", n)
		}
		seen[u] = true
		c.nodes = append(c.nodes, u)
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.failover <= 0 {
		c.failover = DefaultFailover
	}
	if c.http == nil {
		c.http = defaultHTTP()
	}
	if c.log == nil {
		c.log = hclog.NewNullLogger()
	}
	return c, nil
}

// NodeURL returns a node address as the base URL the client uses:
// "host:port" becomes "http://host:port"; a URL must be http or https with
// a host and port and nothing after the path "/".
func NodeURL(node string) (string, error) {
	s := strings.TrimSpace(node)
	if s == "" {
		return "", errors.New("rqlite: an empty node address: give each node as http://HOST:PORT or HOST:PORT")
	}
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	bad := func(why string) error {
		return fmt.Errorf("rqlite: node address %q %s: give it as http://HOST:PORT or HOST:PORT", node, why)
	}
	switch {
	case err != nil:
		return "", bad("is not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return "", bad("has scheme " + u.Scheme + ", not http or https")
	case u.Hostname() == "":
		return "", bad("has no host")
	case u.Port() == "":
		return "", bad("has no port (rqlite's HTTP port is 4001 by default)")
	case u.User != nil || u.RawQuery != "" || u.Fragment != "" || (u.Path != "" && u.Path != "/"):
		return "", bad("has more than scheme, host and port")
	}
	return u.Scheme + "://" + u.Host, nil
}

// Nodes returns the base URLs of the nodes, in the order given.
func (c *Client) Nodes() []string { return append([]string(nil), c.nodes...) }

func defaultHTTP() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	t.MaxIdleConnsPerHost = 16
	return &http.Client{Transport: t}
}

// verdict is what one attempt at one node came to.
type verdict int

const (
	// answered: the node answered; the attempt's error (nil or not) is
	// the call's result.
	answered verdict = iota
	// notSent: nothing reached the node (it could not be reached, or the
	// request was not fully written).
	notSent
	// noLeader: the node answered that it cannot serve now (no leader,
	// not ready); nothing was applied.
	noLeader
	// maybeSent: the request was written, and no usable answer came.
	maybeSent
)

// request is one HTTP call the client makes to some node.
type request struct {
	method      string
	path        string // with its query string
	body        []byte
	contentType string
	// write: the request changes the cluster and is never sent twice
	// once it may have reached a node.
	write bool
	// read handles a 2xx answer: it reads the body and says whether the
	// node served the request.
	read func(resp *http.Response) (verdict, error)
}

// attemptError describes one node's failure for the summary of an
// ErrUnavailable.
type attemptError struct {
	node string
	v    verdict
	err  error
}

// do sends r to the nodes in turn until one serves it, the context ends,
// or (for a write) it may have reached a node without an answer.
func (c *Client) do(ctx context.Context, r *request) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.failover)
		defer cancel()
	}
	start := time.Now()
	last := map[string]attemptError{}
	var order []string
	readFailures := 0
	pause := firstPause
	first := int(c.preferred.Load())
	for {
		for k := range c.nodes {
			i := (first + k) % len(c.nodes)
			node := c.nodes[i]
			v, err := c.attempt(ctx, node, r)
			if v == answered {
				c.preferred.Store(int32(i))
				return err
			}
			c.log.Debug("rqlite attempt failed", "node", node, "path", r.path, "error", err)
			if _, ok := last[node]; !ok {
				order = append(order, node)
			}
			last[node] = attemptError{node, v, err}
			if v == maybeSent {
				if r.write {
					return &unknownOutcome{node: node, err: err}
				}
				// A read that reached a node and failed may fail alike
				// everywhere: one round of them is enough.
				if readFailures++; readFailures >= len(c.nodes) {
					return c.unavailable(order, last, time.Since(start), nil)
				}
			}
			if ctx.Err() != nil {
				return c.unavailable(order, last, time.Since(start), ctx.Err())
			}
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return c.unavailable(order, last, time.Since(start), ctx.Err())
		case <-t.C:
		}
		pause = min(2*pause, maxPause)
	}
}

// attempt sends r to one node, bounded by the per-request timeout.
func (c *Client) attempt(ctx context.Context, node string, r *request) (verdict, error) {
	actx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var wrote atomic.Bool
	actx = httptrace.WithClientTrace(actx, &httptrace.ClientTrace{
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil {
				wrote.Store(true)
			}
		},
	})
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(actx, r.method, node+r.path, body)
	if err != nil {
		return answered, fmt.Errorf("rqlite: %w", err)
	}
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return sentOrNot(&wrote), describe(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		v, err := r.read(resp)
		if v == maybeSent && !wrote.Load() {
			v = notSent // cannot happen with an answer, but never guess "sent"
		}
		return v, err
	}
	text := readText(resp.Body)
	switch {
	case resp.StatusCode == http.StatusServiceUnavailable || refusedBeforeApply(text):
		// 503, or 500 "leader address: leader not found".
		return noLeader, fmt.Errorf("no leader (%d %s)", resp.StatusCode, text)
	case r.write && resp.StatusCode >= 500:
		// rqlite answers 500 when a forwarded write failed at the
		// leader (load): it may have been applied.
		return maybeSent, fmt.Errorf("%d %s", resp.StatusCode, text)
	}
	return answered, fmt.Errorf("rqlite: %s%s answered %d: %s", node, pathOnly(r.path), resp.StatusCode, text)
}

// sentOrNot classifies a transport error by whether the whole request was
// written before it.
func sentOrNot(wrote *atomic.Bool) verdict {
	if wrote.Load() {
		return maybeSent
	}
	return notSent
}

// describe shortens a transport error for a summary: the URL is named
// elsewhere.
func describe(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return errors.New("timeout")
	case errors.Is(err, context.Canceled):
		return errors.New("cancelled")
	}
	return err
}

func pathOnly(p string) string {
	if i := strings.IndexByte(p, '?'); i >= 0 {
		return p[:i]
	}
	return p
}

// readText reads an error body, bounded, as one line.
func readText(r io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(r, 4096))
	s := strings.Join(strings.Fields(string(b)), " ")
	if s == "" {
		return "(no body)"
	}
	return s
}

// unavailable builds the ErrUnavailable of a call that no node served.
func (c *Client) unavailable(order []string, last map[string]attemptError, took time.Duration, ctxErr error) error {
	var parts []string
	unreachable, leaderless := 0, 0
	for _, n := range order {
		a := last[n]
		parts = append(parts, fmt.Sprintf("%s: %v", n, a.err))
		switch a.v {
		case notSent:
			unreachable++
		case noLeader:
			leaderless++
		}
	}
	var why string
	switch {
	case len(order) == 0 && ctxErr != nil:
		why = "the call's time ran out before any node was tried"
	case unreachable == len(order) && len(order) == len(c.nodes):
		why = "no node reachable"
	case unreachable+leaderless == len(order) && leaderless > 0:
		why = "no leader (an election may be under way, or too few nodes are up for a majority)"
	default:
		why = "no node served the request"
	}
	if ctxErr != nil && len(order) > 0 {
		why += fmt.Sprintf("; gave up after %s", took.Round(time.Millisecond))
	}
	return &UnavailableError{Reason: why, Attempts: parts}
}
