package rqlite

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
)

func init() {
	firstPause = time.Millisecond
	maxPause = 10 * time.Millisecond
}

// node is a fake rqlite node: it counts the requests that reach it and
// answers with its handler.
type node struct {
	*httptest.Server
	hits atomic.Int32
	// paths holds every request's path and query.
	paths chan string
}

func newNode(t *testing.T, h http.HandlerFunc) *node {
	t.Helper()
	n := &node{paths: make(chan string, 100)}
	n.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.hits.Add(1)
		select {
		case n.paths <- r.URL.RequestURI():
		default:
		}
		h(w, r)
	}))
	t.Cleanup(n.Close)
	return n
}

// deadNode is an address where nothing listens.
func deadNode(t *testing.T) string {
	s := httptest.NewServer(http.NotFoundHandler())
	u := s.URL
	s.Close()
	return u
}

func answer(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}
}

func status(code int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		http.Error(w, body, code)
	}
}

// hang reads the request and never answers (until the client goes).
func hang(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	<-r.Context().Done()
}

// drop reads the request and closes the connection without an answer.
func drop(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		conn.Close()
	}
}

// okExec answers two statements.
const okExec = `{"results":[{"last_insert_id":7,"rows_affected":1},{"last_insert_id":8,"rows_affected":1}],"raft_index":42}`

func newClient(t *testing.T, urls ...string) *Client {
	t.Helper()
	c, err := New(urls, Options{Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func insert() []Statement {
	return []Statement{{SQL: "INSERT INTO t(a) VALUES(?)", Args: []any{1}}, {SQL: "INSERT INTO t(a) VALUES(2)"}}
}

func TestExecuteFailover(t *testing.T) {
	tests := []struct {
		name string
		// first and second are the two nodes' handlers; nil first means
		// a node where nothing listens.
		first, second http.HandlerFunc
		// wantErr: nil for success, else the error errors.Is must match.
		wantErr error
		// secondHits is how often the second node must have been asked
		// (-1: any number of times).
		secondHits int32
		// inMessage must appear in the error text.
		inMessage string
	}{
		{name: "first answers", first: answer(okExec), second: answer(okExec), secondHits: 0},
		{name: "first unreachable", first: nil, second: answer(okExec), secondHits: 1},
		{name: "first has no leader (503)", first: status(503, "leader not found"), second: answer(okExec), secondHits: 1},
		{name: "first forwards to an old leader", first: answer(`{"results":[],"error":"node failed to process Execute on remote node at 127.0.0.1:4002: not leader"}`), second: answer(okExec), secondHits: 1},
		// As rqlite v8.43.4 answered with its leader just killed.
		{name: "first cannot dial the old leader", first: answer(`{"results":[],"error":"node failed to process Execute on remote node at 127.0.0.1:45677: pool get: dial tcp 127.0.0.1:45677: connect: connection refused"}`), second: answer(okExec), secondHits: 1},
		{name: "first could not write to the old leader", first: answer(`{"results":[],"error":"node failed to process Execute on remote node at 127.0.0.1:45677: write protobuf bytes: write tcp 127.0.0.1:37734->127.0.0.1:45677: write: broken pipe"}`), second: answer(okExec), secondHits: 1},
		{name: "first knows no leader (500)", first: status(500, "leader address: leader not found"), second: answer(okExec), secondHits: 1},
		{name: "first not ready", first: answer(`{"results":[],"error":"store not ready"}`), second: answer(okExec), secondHits: 1},
		{name: "statement error is final", first: answer(`{"results":[{"last_insert_id":3,"rows_affected":1},{"error":"UNIQUE constraint failed: t.id"}],"raft_index":4}`), second: answer(okExec),
			wantErr: errcode.SQL, secondHits: 0, inMessage: "statement 1 failed: UNIQUE constraint failed: t.id; the request was rolled back as a whole"},
		{name: "timeout after sending", first: hang, second: answer(okExec), wantErr: ErrUnknownOutcome, secondHits: 0, inMessage: "check whether it did before sending it again"},
		{name: "connection lost after sending", first: drop, second: answer(okExec), wantErr: ErrUnknownOutcome, secondHits: 0},
		{name: "leadership lost while committing", first: answer(`{"results":[],"error":"leadership lost while committing log"}`), second: answer(okExec), wantErr: ErrUnknownOutcome, secondHits: 0},
		{name: "forwarding broke", first: answer(`{"results":[],"error":"node failed to process Execute on remote node at 127.0.0.1:4002: read protobuf length: EOF"}`), second: answer(okExec), wantErr: ErrUnknownOutcome, secondHits: 0},
		{name: "half an answer", first: answer(`{"results":[{"last_insert`), second: answer(okExec), wantErr: ErrUnknownOutcome, secondHits: 0},
		{name: "no leader anywhere", first: status(503, "leader not found"), second: status(503, "leader not found"), wantErr: ErrUnavailable, secondHits: -1, inMessage: "no leader"},
		{name: "bad request is final", first: status(400, "invalid JSON body"), second: answer(okExec), wantErr: errors.New("any"), secondHits: 0, inMessage: "answered 400: invalid JSON body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var first string
			if tt.first != nil {
				first = newNode(t, tt.first).URL
			} else {
				first = deadNode(t)
			}
			second := newNode(t, tt.second)
			c, err := New([]string{first, second.URL}, Options{Timeout: 300 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			res, err := c.Execute(ctx, []Statement{{SQL: "INSERT INTO t(id) VALUES(3)"}, {SQL: "INSERT INTO t(id) VALUES(1)"}})
			if got := second.hits.Load(); tt.secondHits >= 0 && got != tt.secondHits {
				t.Errorf("second node asked %d times, want %d", got, tt.secondHits)
			}
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("Execute: %v", err)
				}
				want := &ExecResult{RaftIndex: 42, Results: []ExecStatement{{LastInsertID: 7, RowsAffected: 1}, {LastInsertID: 8, RowsAffected: 1}}}
				if !reflect.DeepEqual(res, want) {
					t.Fatalf("got %+v, want %+v", res, want)
				}
				return
			}
			if err == nil {
				t.Fatalf("Execute succeeded, want %v", tt.wantErr)
			}
			if tt.wantErr.Error() != "any" && !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %q is not %v", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.inMessage) {
				t.Fatalf("error %q does not say %q", err, tt.inMessage)
			}
		})
	}
}

// TestUnknownIsNotUnavailable: a caller that retries on ErrUnavailable must
// never retry an unknown outcome by mistake.
func TestUnknownIsNotUnavailable(t *testing.T) {
	c := newClient(t, newNode(t, drop).URL)
	_, err := c.Execute(context.Background(), insert())
	if !errors.Is(err, ErrUnknownOutcome) || errors.Is(err, ErrUnavailable) {
		t.Fatalf("got %v: want ErrUnknownOutcome and not ErrUnavailable", err)
	}
	if errcode.Of(err) != errcode.DatabaseUnavailable {
		t.Fatalf("code %s", errcode.Of(err))
	}
	c = newClient(t, deadNode(t))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = c.Execute(ctx, insert())
	if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrUnknownOutcome) {
		t.Fatalf("got %v: want ErrUnavailable only", err)
	}
	if !strings.Contains(err.Error(), "no node reachable") {
		t.Fatalf("%q does not say no node is reachable", err)
	}
}

// TestReadsRetryWhereWritesDoNot: a read lost on the way is asked of the
// next node; the same loss for a write is an unknown outcome.
func TestReadsRetryWhereWritesDoNot(t *testing.T) {
	rows := `{"results":[{"columns":["a"],"types":["integer"],"values":[[1]]}]}`
	first, second := newNode(t, drop), newNode(t, answer(rows))
	c := newClient(t, first.URL, second.URL)
	res, err := c.Query(context.Background(), []Statement{{SQL: "SELECT a FROM t"}}, Strong)
	if err != nil {
		t.Fatalf("Query: %v", err)
	}
	if got := res.Results[0].Values; !reflect.DeepEqual(got, [][]any{{int64(1)}}) {
		t.Fatalf("rows %v", got)
	}
	// A read that fails alike everywhere stops after one round.
	bad := `{"results":[],"error":"node failed to process Query on remote node at x: read protobuf length: EOF"}`
	c = newClient(t, newNode(t, answer(bad)).URL, newNode(t, answer(bad)).URL)
	start := time.Now()
	_, err = c.Query(context.Background(), []Statement{{SQL: "SELECT 1"}}, Weak)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "read protobuf length") {
		t.Fatalf("got %v", err)
	}
	if time.Since(start) > DefaultFailover/2 {
		t.Fatalf("a deterministic read failure was retried until the deadline")
	}
}

// TestRemembersTheNodeThatAnswered: after a failover the next call goes
// straight to the node that answered.
func TestRemembersTheNodeThatAnswered(t *testing.T) {
	first, second := newNode(t, status(503, "leader not found")), newNode(t, answer(okExec))
	c := newClient(t, first.URL, second.URL)
	for range 3 {
		if _, err := c.Execute(context.Background(), insert()); err != nil {
			t.Fatal(err)
		}
	}
	if got := first.hits.Load(); got != 1 {
		t.Fatalf("first node asked %d times, want once", got)
	}
}

func TestRequestParameters(t *testing.T) {
	var body []byte
	n := newNode(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ = io.ReadAll(r.Body)
		if strings.HasPrefix(r.URL.Path, "/db/query") {
			io.WriteString(w, `{"results":[{"columns":["a"],"types":["integer"],"values":[[1]]}]}`)
			return
		}
		io.WriteString(w, okExec)
	})
	c := newClient(t, n.URL)
	if _, err := c.Execute(context.Background(), []Statement{{SQL: "INSERT INTO t VALUES(?, ?, ?, ?, ?)", Args: []any{int64(1), 2.0, "x", []byte{0, 255}, nil}}, {SQL: "SELECT 1"}}); err != nil {
		t.Fatal(err)
	}
	if got, want := <-n.paths, "/db/execute?transaction&noparse&norwrandom&norwtime&raft_index"; got != want {
		t.Errorf("execute went to %s, want %s", got, want)
	}
	if got, want := string(body), `[["INSERT INTO t VALUES(?, ?, ?, ?, ?)",1,2.0,"x",[0,255],null],"SELECT 1"]`; got != want {
		t.Errorf("body %s, want %s", got, want)
	}
	if _, err := c.Query(context.Background(), []Statement{{SQL: "SELECT a FROM t"}}, Linearizable); err != nil {
		t.Fatal(err)
	}
	if got, want := <-n.paths, "/db/query?level=linearizable&noparse&blob_array"; got != want {
		t.Errorf("query went to %s, want %s", got, want)
	}
	if got, want := string(body), `["SELECT a FROM t"]`; got != want {
		t.Errorf("body %s, want %s", got, want)
	}
}

func TestQueryDecoding(t *testing.T) {
	// As rqlite v8.43.4 answered on this machine (blob_array), and the
	// edge cases of its encoding.
	n := newNode(t, answer(`{"results":[
		{"columns":["id","r","s","b","n","x","f","big"],"types":["integer","real","text","blob","numeric","","double precision","integer"],
		 "values":[[1,2,"hé",[0,255],3,null,1.5,9007199254740993],
		           [2,1e+300,"AP8=","abc",2.5,true,7,1e21]]},
		{"columns":["n"],"types":["floating point"],"values":[[5]]}]}`))
	c := newClient(t, n.URL)
	res, err := c.Query(context.Background(), []Statement{{SQL: "SELECT 1"}, {SQL: "SELECT 2"}}, None)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]any{
		{int64(1), float64(2), "hé", []byte{0, 255}, int64(3), nil, 1.5, int64(9007199254740993)},
		{int64(2), 1e300, "AP8=", "abc", 2.5, int64(1), float64(7), 1e21},
	}
	if got := res.Results[0].Values; !reflect.DeepEqual(got, want) {
		t.Fatalf("rows\n got %#v\nwant %#v", got, want)
	}
	// "FLOATING POINT" has INT in it: integer affinity, as in SQLite.
	if got := res.Results[1].Values[0][0]; got != int64(5) {
		t.Fatalf("floating point column: %#v", got)
	}
}

func TestQueryStatementError(t *testing.T) {
	n := newNode(t, answer(`{"results":[{"columns":["a"],"types":["integer"],"values":[[1]]},{"error":"no such column: nosuch"}]}`))
	c := newClient(t, n.URL)
	_, err := c.Query(context.Background(), []Statement{{SQL: "SELECT 1"}, {SQL: "SELECT nosuch FROM t"}}, Weak)
	var se *StatementError
	if !errors.As(err, &se) || se.Index != 1 || se.Message != "no such column: nosuch" {
		t.Fatalf("got %v", err)
	}
	if strings.Contains(err.Error(), "rolled back") {
		t.Fatalf("a read's error speaks of a rollback: %q", err)
	}
}

func TestEncodeArg(t *testing.T) {
	tests := []struct {
		arg     any
		want    string
		wantErr string
	}{
		{nil, "null", ""},
		{true, "true", ""},
		{42, "42", ""},
		{int64(-9007199254740993), "-9007199254740993", ""},
		{uint64(1) << 63, "", "larger than"},
		{2.0, "2.0", ""},
		{1.5, "1.5", ""},
		{1e21, "1e+21", ""},
		{float32(0.5), "0.5", ""},
		{"plain", `"plain"`, ""},
		{`quote " and \`, `"quote \" and \\"`, ""},
		{"x'00ff'", "", "would be stored as a BLOB"},
		{" X'AB' ", "", "would be stored as a BLOB"},
		{"x''", "", "would be stored as a BLOB"},
		{"x'0'", `"x'0'"`, ""},   // odd length: rqlite keeps it text
		{"x'zz'", `"x'zz'"`, ""}, // not hex
		{[]byte{1, 2}, "[1,2]", ""},
		{[]byte{}, "[]", ""},
		{struct{}{}, "", "cannot be sent"},
	}
	for _, tt := range tests {
		got, err := encodeArg(tt.arg)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("encodeArg(%#v) = %q, %v; want error %q", tt.arg, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("encodeArg(%#v) = %q, %v; want %q", tt.arg, got, err, tt.want)
		}
	}
}

func TestArgumentErrorNamesTheArgument(t *testing.T) {
	c := newClient(t, newNode(t, answer(okExec)).URL)
	_, err := c.Execute(context.Background(), []Statement{{SQL: "SELECT 1"}, {SQL: "INSERT INTO t VALUES(?, ?)", Args: []any{1, "x'00'"}}})
	var ae *ArgumentError
	if !errors.As(err, &ae) || ae.Statement != 1 || ae.Arg != 1 || errcode.Of(err) != errcode.InvalidArgument {
		t.Fatalf("got %v", err)
	}
}

func TestNodeURL(t *testing.T) {
	tests := []struct{ in, want, wantErr string }{
		{"http://127.0.0.1:4001", "http://127.0.0.1:4001", ""},
		{"127.0.0.1:4001", "http://127.0.0.1:4001", ""},
		{"https://db.example:443/", "https://db.example:443", ""},
		{"[::1]:4001", "http://[::1]:4001", ""},
		{"", "", "empty"},
		{"localhost", "", "no port"},
		{"ftp://h:1", "", "scheme ftp"},
		{"http://h:1/db", "", "more than"},
		{"http://u:p@h:1", "", "more than"},
		{"http://:4001", "", "no host"},
	}
	for _, tt := range tests {
		got, err := NodeURL(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), tt.in) {
				t.Errorf("NodeURL(%q) = %q, %v; want an error naming it and saying %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("NodeURL(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	if _, err := New([]string{"h:1", "http://h:1"}, Options{}); err == nil {
		t.Error("New accepted the same node twice")
	}
}

func TestStatusAndWaitApplied(t *testing.T) {
	var applied atomic.Int64
	n := newNode(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"store":{"node_id":"n2","addr":"127.0.0.1:4012","db_applied_index":`+
			strconv.FormatInt(applied.Add(1), 10)+
			`,"leader":{"addr":"127.0.0.1:4002","node_id":"n1"},"raft":{"state":"Follower"}}}`)
	})
	c := newClient(t, n.URL)
	st, err := c.Status(context.Background(), n.URL)
	if err != nil {
		t.Fatal(err)
	}
	want := NodeStatus{Node: n.URL, ID: "n2", AppliedIndex: 1, RaftState: "Follower", LeaderID: "n1", LeaderRaftAddr: "127.0.0.1:4002", RaftAddr: "127.0.0.1:4012"}
	if st != want {
		t.Fatalf("got %+v, want %+v", st, want)
	}
	if err := c.WaitApplied(context.Background(), n.URL, 5); err != nil {
		t.Fatalf("WaitApplied: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err = c.WaitApplied(ctx, n.URL, 1<<40)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "is behind") {
		t.Fatalf("got %v", err)
	}
}

func TestBackupAndLoad(t *testing.T) {
	file := append([]byte("SQLite format 3\x00"), bytes.Repeat([]byte{7}, 100)...)
	var loaded []byte
	var contentType string
	n := newNode(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/db/backup":
			w.Write(file)
		case "/db/load":
			contentType = r.Header.Get("Content-Type")
			loaded, _ = io.ReadAll(r.Body)
			io.WriteString(w, `{"results":[]}`)
		}
	})
	c := newClient(t, deadNode(t), n.URL)
	var buf bytes.Buffer
	if err := c.Backup(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), file) {
		t.Fatalf("backup differs")
	}
	if err := c.Load(context.Background(), bytes.NewReader(file)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(loaded, file) || contentType != "application/octet-stream" {
		t.Fatalf("load sent %d bytes as %q", len(loaded), contentType)
	}
	if err := c.Load(context.Background(), strings.NewReader("DROP TABLE t;")); err == nil || !strings.Contains(err.Error(), "not a SQLite database") {
		t.Fatalf("Load of SQL text: %v", err)
	}
}

// TestDBTimeout: Options.DBTimeout travels as db_timeout on every Execute
// (never on reads), and a statement rqlite stopped at it reads as TimedOut.
func TestDBTimeout(t *testing.T) {
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		path    string
	}{
		{"none", 0, "/db/execute?transaction&noparse&norwrandom&norwtime&raft_index"},
		{"seconds", 2 * time.Second, "/db/execute?transaction&noparse&norwrandom&norwtime&raft_index&db_timeout=2s"},
		{"fraction", 1500 * time.Millisecond, "/db/execute?transaction&noparse&norwrandom&norwtime&raft_index&db_timeout=1.5s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newNode(t, func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				if strings.HasPrefix(r.URL.Path, "/db/query") {
					io.WriteString(w, `{"results":[{"columns":["a"],"types":["integer"],"values":[[1]]}]}`)
					return
				}
				io.WriteString(w, `{"results":[{},{"error":"execute timeout"}],"raft_index":9}`)
			})
			c, err := New([]string{n.URL}, Options{Timeout: 2 * time.Second, DBTimeout: tc.timeout})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Execute(context.Background(), insert())
			var se *StatementError
			if !errors.As(err, &se) || se.Index != 1 || !se.TimedOut() {
				t.Fatalf("got %v, want statement 1 timed out", err)
			}
			if got := <-n.paths; got != tc.path {
				t.Errorf("execute went to %s, want %s", got, tc.path)
			}
			if _, err := c.Query(context.Background(), []Statement{{SQL: "SELECT 1"}}, Weak); err != nil {
				t.Fatal(err)
			}
			if got := <-n.paths; strings.Contains(got, "db_timeout") {
				t.Errorf("a read carries db_timeout: %s", got)
			}
		})
	}
	if (&StatementError{Message: "no such table: t"}).TimedOut() {
		t.Error("a plain SQL error reads as timed out")
	}
}
