package rqlite

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// NodeStatus is what GET /status says of one node.
type NodeStatus struct {
	// Node is the node's base URL, as the client names it.
	Node string
	// ID is the node's id (-node-id).
	ID string
	// AppliedIndex is the last Raft index applied to the node's SQLite
	// file (store.db_applied_index).
	AppliedIndex uint64
	// RaftState is "Leader", "Follower", "Candidate" or "Shutdown".
	RaftState string
	// LeaderID and LeaderRaftAddr name the leader the node knows of;
	// empty when it knows none. The address is the leader's Raft address
	// (-raft-addr), not its HTTP one.
	LeaderID       string
	LeaderRaftAddr string
	// RaftAddr is the node's own Raft address.
	RaftAddr string
	// Dir is the node's data directory (store.dir), as the node sees it.
	Dir string
}

type wireStatus struct {
	Store struct {
		NodeID         string `json:"node_id"`
		Addr           string `json:"addr"`
		Dir            string `json:"dir"`
		DBAppliedIndex uint64 `json:"db_applied_index"`
		Leader         struct {
			Addr   string `json:"addr"`
			NodeID string `json:"node_id"`
		} `json:"leader"`
		Raft struct {
			State string `json:"state"`
		} `json:"raft"`
	} `json:"store"`
}

// Status asks node (one of the client's nodes, or another node's address)
// for its status. There is no failover: the answer is that node's.
func (c *Client) Status(ctx context.Context, node string) (NodeStatus, error) {
	base, err := NodeURL(node)
	if err != nil {
		return NodeStatus{}, err
	}
	actx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodGet, base+"/status", nil)
	if err != nil {
		return NodeStatus{}, fmt.Errorf("rqlite: %w", err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return NodeStatus{}, &UnavailableError{Reason: "the node did not answer", Attempts: []string{fmt.Sprintf("%s: %v", base, describe(err))}}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return NodeStatus{}, &UnavailableError{Reason: "the node refused its status", Attempts: []string{fmt.Sprintf("%s: %d %s", base, resp.StatusCode, readText(resp.Body))}}
	}
	var w wireStatus
	if err := json.NewDecoder(resp.Body).Decode(&w); err != nil {
		return NodeStatus{}, fmt.Errorf("rqlite: %s/status: unreadable answer: %w", base, err)
	}
	return NodeStatus{
		Node: base, ID: w.Store.NodeID, AppliedIndex: w.Store.DBAppliedIndex,
		RaftState: w.Store.Raft.State, LeaderID: w.Store.Leader.NodeID,
		LeaderRaftAddr: w.Store.Leader.Addr, RaftAddr: w.Store.Addr, Dir: w.Store.Dir,
	}, nil
}

// Polling of WaitApplied: a few milliseconds first (a follower applies a
// write about one heartbeat after the leader), growing to a cap.
var (
	appliedFirstPoll = 2 * time.Millisecond
	appliedMaxPoll   = 100 * time.Millisecond
)

// WaitApplied waits until node has applied the Raft index (a write's
// ExecResult.RaftIndex), so that reading that node's SQLite file sees the
// write. It gives up when ctx ends (with no deadline, after the client's
// Failover bound) with an error saying how far behind the node is.
func (c *Client) WaitApplied(ctx context.Context, node string, index uint64) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.failover)
		defer cancel()
	}
	start := time.Now()
	poll := appliedFirstPoll
	var last NodeStatus
	var lastErr error
	for {
		st, err := c.Status(ctx, node)
		if err == nil && st.AppliedIndex >= index {
			return nil
		}
		if err == nil {
			last, lastErr = st, nil
		} else {
			lastErr = err
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			took := time.Since(start).Round(time.Millisecond)
			if lastErr != nil && last.Node == "" {
				return &UnavailableError{Reason: fmt.Sprintf("node %s did not report its applied index within %s (it must reach %d)", node, took, index), Attempts: []string{lastErr.Error()}}
			}
			return &UnavailableError{Reason: fmt.Sprintf("node %s is behind: it applied Raft index %d of %d after %s", node, last.AppliedIndex, index, took), Attempts: []string{fmt.Sprintf("%s: state %s, leader %q", last.Node, last.RaftState, last.LeaderID)}}
		case <-t.C:
		}
		poll = min(2*poll, appliedMaxPoll)
	}
}

// sqliteHeader starts every SQLite database file.
var sqliteHeader = []byte("SQLite format 3\x00")

// Backup writes a consistent copy of the whole database, as a SQLite file,
// to w (GET /db/backup, served by the leader). It fails over like a read
// until the first byte; a failure while copying is returned as it is.
func (c *Client) Backup(ctx context.Context, w io.Writer) error {
	var copyErr error
	err := c.do(ctx, &request{
		method: http.MethodGet, path: "/db/backup",
		read: func(resp *http.Response) (verdict, error) {
			br := bufio.NewReader(resp.Body)
			head, err := br.Peek(len(sqliteHeader))
			if err != nil || !bytes.Equal(head, sqliteHeader) {
				return maybeSent, fmt.Errorf("the backup is not a SQLite file (%d bytes read: %v)", len(head), err)
			}
			if _, err := io.Copy(w, br); err != nil {
				copyErr = fmt.Errorf("rqlite: backup: copying the file: %w", err)
			}
			return answered, nil
		},
	})
	if err != nil {
		return err
	}
	return copyErr
}

// Load replaces the whole database of the cluster with the SQLite file r
// holds (POST /db/load, through the Raft log: every node loads it). It is
// meant to fill an empty cluster; the caller checks that it is empty.
// A body that is not a SQLite file is refused here: rqlite v8 would run it
// as SQL text.
func (c *Client) Load(ctx context.Context, r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("rqlite: load: reading the file: %w", err)
	}
	if !bytes.HasPrefix(data, sqliteHeader) {
		return errors.New("rqlite: load: the file is not a SQLite database (no \"SQLite format 3\" header): give a database file, as a backup writes it")
	}
	return c.do(ctx, &request{
		method: http.MethodPost, path: "/db/load", body: data,
		contentType: "application/octet-stream", write: true,
		read: func(resp *http.Response) (verdict, error) {
			dec := json.NewDecoder(resp.Body)
			var w wireResponse
			if err := dec.Decode(&w); err != nil && err != io.EOF {
				return maybeSent, fmt.Errorf("unreadable answer: %v", err)
			}
			if w.Error != "" {
				if refusedBeforeApply(w.Error) {
					return noLeader, fmt.Errorf("not served: %s", w.Error)
				}
				return maybeSent, fmt.Errorf("the node answered %q", w.Error)
			}
			return answered, nil
		},
	})
}
