package rqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// executeBase is every write's endpoint and parameters: one Raft entry and
// one SQLite transaction (any failing statement rolls back all of them),
// the text run exactly as sent, and the entry's index in the answer.
// Never "queue": queued writes are acknowledged before they commit.
// noparse: rqlite does not parse the text at all. Without it v8.43.4
// parses every statement holding "returning " and, when its parser reads
// it, runs it as a query: the rows change but rows_affected is 0, while
// the same statement that its parser cannot read (a [bracketed] name)
// answers its count: the answer would depend on rqlite's parser.
const executeBase = "/db/execute?transaction&noparse&norwrandom&norwtime&raft_index"

// ExecResult is the answer to an Execute.
type ExecResult struct {
	// RaftIndex is the Raft log index of the write: a node whose applied
	// index reached it has applied the write (Client.WaitApplied).
	RaftIndex uint64
	// Results has one entry per statement, in order.
	Results []ExecStatement
}

// ExecStatement is what one statement of an Execute did.
type ExecStatement struct {
	LastInsertID int64
	RowsAffected int64
}

// Level is the read consistency of a Query (rqlite's "level").
type Level string

// The levels rqlite v8 offers.
const (
	// None reads the receiving node's SQLite file with no check at all.
	None Level = "none"
	// Weak reads on the node that believes it is the leader.
	Weak Level = "weak"
	// Strong sends the read through the Raft log (slowest).
	Strong Level = "strong"
	// Linearizable has the leader confirm its leadership with a quorum
	// before reading.
	Linearizable Level = "linearizable"
)

// QueryResult is the answer to a Query: one Rows per statement.
type QueryResult struct {
	Results []Rows
}

// Rows is one read statement's result.
type Rows struct {
	Columns []string
	// Types are the columns' types as rqlite reports them: the declared
	// type in lower case, else the type of the first row's value.
	Types []string
	// Values holds nil, int64, float64, string or []byte.
	Values [][]any
}

// wireResponse is rqlite's JSON answer to /db/execute and /db/query.
type wireResponse struct {
	Results   []wireResult `json:"results"`
	Error     string       `json:"error"`
	RaftIndex uint64       `json:"raft_index"`
}

type wireResult struct {
	LastInsertID int64    `json:"last_insert_id"`
	RowsAffected int64    `json:"rows_affected"`
	Columns      []string `json:"columns"`
	Types        []string `json:"types"`
	Values       [][]any  `json:"values"`
	Error        string   `json:"error"`
}

// Execute runs stmts as one atomic write. A statement that fails makes a
// *StatementError and nothing of the request took effect; ErrUnknownOutcome
// says the request may have been applied without an answer.
func (c *Client) Execute(ctx context.Context, stmts []Statement) (*ExecResult, error) {
	body, err := encodeStatements(stmts)
	if err != nil {
		return nil, err
	}
	var res *ExecResult
	err = c.do(ctx, &request{
		method: http.MethodPost, path: c.executePath, body: body,
		contentType: "application/json", write: true,
		read: func(resp *http.Response) (verdict, error) {
			w, v, err := readWire(resp, true)
			if v != answered || err != nil {
				return v, err
			}
			// rqlite stops at the first failing statement: its results
			// end there.
			for i, r := range w.Results {
				if r.Error != "" {
					return answered, &StatementError{Index: i, Message: r.Error, write: true}
				}
			}
			if len(w.Results) != len(stmts) {
				return maybeSent, fmt.Errorf("answered %d results for %d statements", len(w.Results), len(stmts))
			}
			res = &ExecResult{RaftIndex: w.RaftIndex, Results: make([]ExecStatement, len(w.Results))}
			for i, r := range w.Results {
				res.Results[i] = ExecStatement{LastInsertID: r.LastInsertID, RowsAffected: r.RowsAffected}
			}
			return answered, nil
		},
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// Query runs read statements at level. rqlite refuses a statement that
// would write ("attempt to change database via query operation").
func (c *Client) Query(ctx context.Context, stmts []Statement, level Level) (*QueryResult, error) {
	return c.query(ctx, stmts, level, 0)
}

// QueryWithin is Query with rqlite's own bound on the statements' run
// (db_timeout): the node stops them when it passes, with SQLite's
// interrupt, and answers an error. A read that runs away inside rqlite is
// stopped there, not only abandoned by this client.
func (c *Client) QueryWithin(ctx context.Context, stmts []Statement, level Level, dbTimeout time.Duration) (*QueryResult, error) {
	return c.query(ctx, stmts, level, dbTimeout)
}

func (c *Client) query(ctx context.Context, stmts []Statement, level Level, dbTimeout time.Duration) (*QueryResult, error) {
	switch level {
	case None, Weak, Strong, Linearizable:
	default:
		return nil, fmt.Errorf("rqlite: unknown read level %q: use none, weak, strong or linearizable", level)
	}
	body, err := encodeStatements(stmts)
	if err != nil {
		return nil, err
	}
	var res *QueryResult
	// noparse: rqlite rewrites nothing (at level strong, v8.43.4 reads
	// "norwrandom" backwards and would rewrite random()); blob_array:
	// BLOBs as byte arrays, never confused with text.
	path := "/db/query?level=" + string(level) + "&noparse&blob_array"
	if dbTimeout > 0 {
		path += "&db_timeout=" + dbTimeout.String()
	}
	err = c.do(ctx, &request{
		method: http.MethodPost, path: path, body: body, contentType: "application/json",
		read: func(resp *http.Response) (verdict, error) {
			w, v, err := readWire(resp, false)
			if v != answered || err != nil {
				return v, err
			}
			for i, r := range w.Results {
				if r.Error != "" {
					return answered, &StatementError{Index: i, Message: r.Error}
				}
			}
			if len(w.Results) != len(stmts) {
				return maybeSent, fmt.Errorf("answered %d results for %d statements", len(w.Results), len(stmts))
			}
			res = &QueryResult{Results: make([]Rows, len(w.Results))}
			for i, r := range w.Results {
				rows, err := decodeRows(r)
				if err != nil {
					return answered, fmt.Errorf("rqlite: statement %d: %w", i, err)
				}
				res.Results[i] = rows
			}
			return answered, nil
		},
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

func decodeRows(r wireResult) (Rows, error) {
	if len(r.Types) != len(r.Columns) {
		return Rows{}, fmt.Errorf("%d types for %d columns", len(r.Types), len(r.Columns))
	}
	rows := Rows{Columns: r.Columns, Types: r.Types, Values: make([][]any, len(r.Values))}
	for i, row := range r.Values {
		if len(row) != len(r.Columns) {
			return Rows{}, fmt.Errorf("row %d has %d values for %d columns", i, len(row), len(r.Columns))
		}
		out := make([]any, len(row))
		for j, v := range row {
			x, err := decodeValue(v, r.Types[j])
			if err != nil {
				return Rows{}, fmt.Errorf("row %d, column %q: %w", i, r.Columns[j], err)
			}
			out[j] = x
		}
		rows.Values[i] = out
	}
	return rows, nil
}

// readWire decodes a 2xx answer of /db/execute or /db/query and sorts a
// request-wide error: the node had no leader (nothing applied), or
// something broke on the way (for a write, it may have been applied).
func readWire(resp *http.Response, write bool) (*wireResponse, verdict, error) {
	dec := json.NewDecoder(resp.Body)
	dec.UseNumber()
	var w wireResponse
	if err := dec.Decode(&w); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, maybeSent, fmt.Errorf("unreadable answer: %v", err)
	}
	if w.Error != "" {
		if refusedBeforeApply(w.Error) {
			return nil, noLeader, fmt.Errorf("not served: %s", w.Error)
		}
		return nil, maybeSent, fmt.Errorf("the node answered %q", w.Error)
	}
	if write && w.RaftIndex == 0 {
		return nil, maybeSent, fmt.Errorf("the answer has no raft_index")
	}
	return &w, answered, nil
}

// refusedBeforeApply says whether a request-wide error of rqlite means the
// request never entered the Raft log: the node (or the leader it forwarded
// to) was not the leader or not ready, or the node could not hand the
// whole request to the leader. Every other error ("leadership lost while
// committing log", a forwarded request whose answer was lost) may follow
// an applied write.
func refusedBeforeApply(msg string) bool {
	for _, s := range []string{"not leader", "leader not found", "store not open", "store not ready"} {
		if strings.HasSuffix(msg, s) {
			return true
		}
	}
	// A follower forwards over rqlite's cluster connection and words its
	// failures "node failed to process Execute on remote node at ADDR:
	// CAUSE" (v8.43.4 cluster/client.go). These causes come before the
	// leader could have read the whole request: no connection, or the
	// write of the request itself failed.
	const prefix, at = "node failed to process ", " on remote node at "
	if !strings.HasPrefix(msg, prefix) {
		return false
	}
	i := strings.Index(msg, at)
	if i < 0 {
		return false
	}
	rest := msg[i+len(at):]
	j := strings.Index(rest, ": ")
	if j < 0 {
		return false
	}
	cause := rest[j+2:]
	for _, p := range []string{"pool get: ", "write length: ", "write protobuf bytes: ", "command marshal: "} {
		if strings.HasPrefix(cause, p) {
			return true
		}
	}
	return false
}
