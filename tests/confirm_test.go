package tests

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// Both protocol generations: elicitation/create while the call waits
// (2025-11-25), and the input_required round trip (2026-07-28).
var confirmVersions = []string{mcp.ProtocolVersion20251125, mcp.ProtocolVersion20260728}

// asker is a person behind an elicitation form: it records every question
// and answers with answer.
type asker struct {
	mu        sync.Mutex
	questions []mcp.ElicitationParams
	answer    func(ctx context.Context, p mcp.ElicitationParams) (*mcp.ElicitationResult, error)
}

func (a *asker) Elicit(ctx context.Context, r mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	a.mu.Lock()
	a.questions = append(a.questions, r.Params)
	a.mu.Unlock()
	return a.answer(ctx, r.Params)
}

func (a *asker) asked() []mcp.ElicitationParams {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.questions)
}

func answering(action mcp.ElicitationResponseAction, content any) *asker {
	return &asker{answer: func(context.Context, mcp.ElicitationParams) (*mcp.ElicitationResult, error) {
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: action, Content: content}}, nil
	}}
}

// startAsking starts the server with a client of protocol version that
// declares elicitation and answers through a.
func startAsking(t *testing.T, db, version string, a *asker, flags ...string) *session {
	t.Helper()
	return startAskingArgs(t, db, version, a, append([]string{"--db", db}, flags...))
}

// startAskingArgs is startAsking with exactly args (a cluster front's).
func startAskingArgs(t *testing.T, db, version string, a *asker, args []string) *session {
	t.Helper()
	tr := transport.NewStdio(serverBin, os.Environ(), args...)
	// A loaded machine (or a race-built server) may answer the
	// server/discover probe after mcp-go's 5 s, which would fall back to
	// the handshake.
	c := client.NewClient(tr, client.WithElicitationHandler(a), client.WithProtocolVersion(version), client.WithDiscoverTimeout(30*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The transport's process lives as long as Start's context.
	if err := c.Start(context.Background()); err != nil {
		t.Fatalf("start server: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = version
	init.Params.ClientInfo = mcp.Implementation{Name: "e2e-confirm", Version: "1"}
	res, err := c.Initialize(ctx, init)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if res.ProtocolVersion != version {
		t.Fatalf("negotiated %s, want %s", res.ProtocolVersion, version)
	}
	return &session{t: t, c: c, db: db}
}

// shopTables are the agent tables the confirmation tests change.
var shopTables = []string{"orders", "order_items", "history"}

func setupShop(t *testing.T, s *session) {
	t.Helper()
	for _, sql := range []string{
		"CREATE TABLE orders (id INTEGER PRIMARY KEY, note TEXT)",
		"CREATE TABLE order_items (id INTEGER PRIMARY KEY, order_id INTEGER REFERENCES orders(id) ON DELETE CASCADE)",
		"CREATE TABLE history (what TEXT)",
		"INSERT INTO orders VALUES (1, 'test'), (2, 'test'), (3, 'keep')",
		"INSERT INTO order_items VALUES (10, 1), (11, 1), (12, 2), (13, 3)",
	} {
		s.ok("write_query", q(sql))
	}
}

// setupTrigger adds a trigger that writes history on every order update
// (destructive_query: it asks, and the asker must allow it).
func setupTrigger(t *testing.T, s *session) {
	t.Helper()
	s.ok("destructive_query", map[string]any{"query": "CREATE TRIGGER orders_history AFTER UPDATE ON orders BEGIN INSERT INTO history VALUES ('changed'); END", "reason": "keep a history"})
}

var deleteTestOrders = map[string]any{"query": "DELETE FROM orders WHERE note = 'test'", "reason": "remove test orders"}

// confirmDetail is the confirm member of the newest audit row of tool
// that records an answer. A 2026-07-28 call writes two rows (the question,
// then the retry's answer), so it waits for the second.
func confirmDetail(t *testing.T, s *session, tool string) map[string]any {
	t.Helper()
	s.audited(s.db)
	var found map[string]any
	newest := func() bool {
		rows := auditLog(t, s.db)
		for i := len(rows) - 1; i >= 0; i-- {
			if rows[i].tool != tool {
				continue
			}
			var d struct {
				Confirm map[string]any `json:"confirm"`
			}
			if err := json.Unmarshal([]byte(rows[i].detail), &d); err != nil {
				t.Fatal(err)
			}
			found = d.Confirm
			return found["answer"] != "asked (input_required)"
		}
		return false
	}
	if !waitFor(10*time.Second, newest) {
		t.Fatalf("no audit row of %s with an answer; newest: %v", tool, found)
	}
	return found
}

func TestConfirmAnswers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		asker  func() *asker
		runs   bool
		answer string
	}{
		{"accept", func() *asker { return answering(mcp.ElicitationResponseActionAccept, map[string]any{"allow": true}) }, true, "accept"},
		{"accept with false", func() *asker { return answering(mcp.ElicitationResponseActionAccept, map[string]any{"allow": false}) }, false, "accept with allow=false"},
		{"accept without the field", func() *asker { return answering(mcp.ElicitationResponseActionAccept, map[string]any{}) }, false, "accept with allow=false"},
		{"decline", func() *asker { return answering(mcp.ElicitationResponseActionDecline, nil) }, false, "decline"},
		{"cancel", func() *asker { return answering(mcp.ElicitationResponseActionCancel, nil) }, false, "cancel"},
	}
	for _, version := range confirmVersions {
		for _, tt := range tests {
			t.Run(version+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				db := newDB(t)
				a := tt.asker()
				s := startAsking(t, db, version, a)
				setupShop(t, s)
				before, askedBefore := dump(t, db, shopTables...), len(a.asked())
				text, isErr := s.call("destructive_query", deleteTestOrders)
				questions := a.asked()[askedBefore:]
				if len(questions) != 1 {
					t.Fatalf("%d questions, want 1", len(questions))
				}
				msg := questions[0].Message
				for _, want := range []string{
					`destructive_query wants to DELETE 2 rows from "orders" and 3 rows from "order_items" (ON DELETE CASCADE).`,
					`Reason: "remove test orders".`, "snapshot is taken first. Allow it?",
					"Statement: DELETE FROM orders WHERE note = 'test'",
				} {
					if !strings.Contains(msg, want) {
						t.Errorf("message %q lacks %q", msg, want)
					}
				}
				if props, _ := questions[0].RequestedSchema.(map[string]any)["properties"].(map[string]any); len(props) != 1 || props["allow"] == nil {
					t.Errorf("schema %v: want one boolean field allow", questions[0].RequestedSchema)
				}
				snaps := snapshotFiles(t, db)
				if tt.runs {
					if isErr || !strings.HasPrefix(text, "ok: 2 rows affected; snapshot: ") {
						t.Fatalf("got %q", text)
					}
					if dump(t, db, shopTables...) == before || len(snaps) != 1 {
						t.Fatalf("the allowed statement did not run: snapshots %v", snaps)
					}
				} else {
					if !isErr || text != "DECLINED: the user did not allow this statement; nothing was changed" {
						t.Fatalf("got (error=%v) %q", isErr, text)
					}
					if dump(t, db, shopTables...) != before || len(snaps) != 0 {
						t.Fatalf("a declined statement changed the database or took a snapshot: %v", snaps)
					}
				}
				d := confirmDetail(t, s, "destructive_query")
				if d["answer"] != tt.answer || d["preview"] == nil {
					t.Fatalf("audit detail %v: want answer %q and the preview", d, tt.answer)
				}
			})
		}
	}
}

func TestConfirmTimeout(t *testing.T) {
	t.Parallel()
	for _, version := range confirmVersions {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			db := newDB(t)
			// The person answers yes, too late.
			a := &asker{answer: func(ctx context.Context, _ mcp.ElicitationParams) (*mcp.ElicitationResult, error) {
				select {
				case <-ctx.Done():
				case <-time.After(2 * time.Second):
				}
				return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"allow": true}}}, nil
			}}
			s := startAsking(t, db, version, a, "--confirm-timeout", "0.5")
			setupShop(t, s)
			before := dump(t, db, shopTables...)
			text := s.fails("destructive_query", deleteTestOrders, "DECLINED")
			if !strings.Contains(text, "nothing was changed") {
				t.Fatalf("got %q", text)
			}
			if dump(t, db, shopTables...) != before || len(snapshotFiles(t, db)) != 0 {
				t.Fatal("a statement nobody allowed changed the database")
			}
		})
	}
}

func TestConfirmWithoutCapability(t *testing.T) {
	t.Parallel()
	t.Run("runs as before", func(t *testing.T) {
		t.Parallel()
		s := start(t, newDB(t))
		setupShop(t, s)
		if text := s.ok("destructive_query", deleteTestOrders); !strings.HasPrefix(text, "ok: 2 rows affected; snapshot: ") {
			t.Fatalf("got %q", text)
		}
	})
	t.Run("required refuses", func(t *testing.T) {
		t.Parallel()
		db := newDB(t)
		s := start(t, db, "--confirm", "required")
		setupShop(t, s)
		before := dump(t, db, shopTables...)
		text := s.fails("destructive_query", deleteTestOrders, "POLICY_VIOLATION")
		if !strings.Contains(text, "--confirm required") || !strings.Contains(text, "elicitation") || !strings.Contains(text, "Nothing was changed") {
			t.Fatalf("got %q", text)
		}
		if dump(t, db, shopTables...) != before || len(snapshotFiles(t, db)) != 0 {
			t.Fatal("a refused statement changed the database or took a snapshot")
		}
	})
}

func TestConfirmWrites(t *testing.T) {
	t.Parallel()
	for _, version := range confirmVersions {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			db := newDB(t)
			a := answering(mcp.ElicitationResponseActionDecline, nil)
			s := startAsking(t, db, version, a, "--confirm", "writes")
			setupShop(t, s) // CREATE TABLE and INSERT overwrite nothing: no question
			if n := len(a.asked()); n != 0 {
				t.Fatalf("%d questions while setting up, want none", n)
			}
			before := dump(t, db, shopTables...)
			if text := s.ok("write_query", q("INSERT INTO history VALUES ('plain insert')")); !strings.HasPrefix(text, "ok: 1 rows affected") {
				t.Fatalf("insert: %q", text)
			}
			if n := len(a.asked()); n != 0 || dump(t, db, shopTables...) == before {
				t.Fatalf("a plain INSERT asked (%d questions) or did not commit", n)
			}
			before = dump(t, db, shopTables...)
			s.fails("write_query", q("UPDATE orders SET note = 'x' WHERE id = 3"), "DECLINED")
			s.fails("write_query", q("REPLACE INTO order_items VALUES (13, 3)"), "DECLINED")
			s.fails("write_query", q("INSERT INTO orders VALUES (3, 'z') ON CONFLICT(id) DO UPDATE SET note = excluded.note"), "DECLINED")
			questions := a.asked()
			if len(questions) != 3 || !strings.Contains(questions[0].Message, `write_query wants to UPDATE 1 row in "orders".`) ||
				!strings.Contains(questions[1].Message, `DELETE 1 row from "order_items" and INSERT 1 row into "order_items"`) || !strings.Contains(questions[0].Message, "No snapshot is taken.") ||
				!strings.Contains(questions[2].Message, `UPDATE 1 row in "orders"`) {
				t.Fatalf("questions %+v", questions)
			}
			if dump(t, db, shopTables...) != before {
				t.Fatal("declined writes changed the database")
			}
			s.ok("create_view", map[string]any{"name": "v", "select_sql": "SELECT 1"})
			s.fails("create_view", map[string]any{"name": "v", "select_sql": "SELECT 2", "replace": true}, "DECLINED")
			if q := a.asked(); len(q) != 4 || !strings.Contains(q[3].Message, `create_view wants to replace the view "v"`) {
				t.Fatalf("create_view replace=true: questions %d", len(q))
			}
		})
	}
}

func TestConfirmCountsTriggersAndReadsNothing(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	a := answering(mcp.ElicitationResponseActionAccept, map[string]any{"allow": true})
	s := startAsking(t, db, mcp.ProtocolVersion20251125, a, "--snapshots", "0")
	setupShop(t, s)
	setupTrigger(t, s)
	n := len(a.asked())
	s.ok("destructive_query", map[string]any{"query": "UPDATE orders SET note = 'secret value'", "reason": "bulk fix"})
	msg := a.asked()[n].Message
	if !strings.Contains(msg, `UPDATE 3 rows in "orders" and INSERT 3 rows into "history" (trigger "orders_history").`) ||
		!strings.Contains(msg, "No snapshot is taken (snapshots are disabled).") {
		t.Fatalf("message %q", msg)
	}
	// A read sent to destructive_query asks nothing; a failing statement
	// answers its error without asking.
	if text := s.ok("destructive_query", map[string]any{"query": "SELECT count(*) AS n FROM orders", "reason": "look"}); text != "n\n3\n# 1 rows" {
		t.Fatalf("read: %q", text)
	}
	s.fails("destructive_query", map[string]any{"query": "DELETE FROM nope", "reason": "x"}, "SQL_ERROR")
	if len(a.asked()) != n+1 {
		t.Fatalf("%d questions, want %d", len(a.asked()), n+1)
	}
	// Values never reach the form, only the agent's statement does.
	if strings.Count(msg, "secret value") != 1 || !strings.Contains(msg, "Statement: UPDATE") {
		t.Fatalf("message %q", msg)
	}
}

func TestConfirmReportsADifferentCount(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	a := &asker{}
	a.answer = func(context.Context, mcp.ElicitationParams) (*mcp.ElicitationResult, error) {
		// Another writer adds a matching row while the person reads.
		if _, err := openDirect(t, db).Exec("INSERT INTO orders VALUES (9, 'test')"); err != nil {
			t.Error(err)
		}
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"allow": true}}}, nil
	}
	s := startAsking(t, db, mcp.ProtocolVersion20251125, a)
	setupShop(t, s)
	text := s.ok("destructive_query", deleteTestOrders)
	if !strings.HasPrefix(text, "ok: 3 rows affected; snapshot: ") || !strings.Contains(text, "the preview the user allowed counted 2 rows, the statement changed 3") {
		t.Fatalf("got %q", text)
	}
}

// modernMeta is the _meta every 2026-07-28 request carries.
var modernMeta = map[string]any{
	mcp.MetaKeyProtocolVersion:    mcp.ProtocolVersion20260728,
	mcp.MetaKeyClientInfo:         map[string]any{"name": "raw-modern", "version": "1"},
	mcp.MetaKeyClientCapabilities: map[string]any{"elicitation": map[string]any{"form": map[string]any{}}},
}

// modernCall sends one 2026-07-28 tools/call with the round-trip fields
// (raw JSON-RPC: mcp-go's client fills them itself) and returns its result.
func modernCall(p *rawServer, id int, tool string, args map[string]any, state string, responses map[string]any) map[string]any {
	params := map[string]any{"name": tool, "arguments": args, "_meta": modernMeta}
	if state != "" {
		params["requestState"] = state
	}
	if responses != nil {
		params["inputResponses"] = responses
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
	p.send(string(b))
	for {
		var msg struct {
			ID     *int           `json:"id"`
			Result map[string]any `json:"result"`
		}
		if json.Unmarshal([]byte(p.read()), &msg) == nil && msg.ID != nil && *msg.ID == id {
			return msg.Result
		}
	}
}

func resultText(r map[string]any) string {
	content, _ := r["content"].([]any)
	if len(content) == 0 {
		return ""
	}
	text, _ := content[0].(map[string]any)["text"].(string)
	return text
}

// TestConfirmRoundTripState: a 2026-07-28 client gets input_required, and
// its retry must carry the state this server handed out, for these very
// arguments; no answer comes from the agent's arguments.
func TestConfirmRoundTripState(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": map[string]any{"_meta": modernMeta}})
	p := startRawInit(t, db, string(b))
	modernCall(p, 2, "write_query", q("CREATE TABLE t (x)"), "", nil)
	modernCall(p, 3, "write_query", q("INSERT INTO t VALUES (1), (2)"), "", nil)
	before := dump(t, db, "t")
	yes := map[string]any{"confirm": map[string]any{"action": "accept", "content": map[string]any{"allow": true}}}
	del := map[string]any{"query": "DELETE FROM t", "reason": "empty it"}

	asked := modernCall(p, 4, "destructive_query", del, "", nil)
	state, _ := asked["requestState"].(string)
	question, _ := asked["inputRequests"].(map[string]any)["confirm"].(map[string]any)
	msg, _ := question["params"].(map[string]any)["message"].(string)
	if asked["resultType"] != "input_required" || state == "" || question["method"] != "elicitation/create" ||
		!strings.Contains(msg, `destructive_query wants to DELETE 2 rows from "t".`) {
		t.Fatalf("first round: %v", asked)
	}
	for i, retry := range []struct {
		args  map[string]any
		state string
		want  string
	}{
		{del, "forged", "unknown or had expired"},
		{map[string]any{"query": "DROP TABLE t", "reason": "empty it"}, state, "another statement"},
		{del, state, "unknown or had expired"}, // the real state was used up by the mismatch
	} {
		res := modernCall(p, 5+i, "destructive_query", retry.args, retry.state, yes)
		if text := resultText(res); res["isError"] != true || !strings.HasPrefix(text, "DECLINED: ") || !strings.Contains(text, retry.want) {
			t.Fatalf("retry %d: %v", i, res)
		}
	}
	if text := resultText(modernCall(p, 9, "destructive_query", map[string]any{"query": "DELETE FROM t", "reason": "x", "allow": true}, "", nil)); !strings.HasPrefix(text, "INVALID_ARGUMENT: ") {
		t.Fatalf("an allow argument from the agent: %q", text)
	}
	if dump(t, db, "t") != before {
		t.Fatal("the database changed without a yes")
	}
	asked = modernCall(p, 10, "destructive_query", del, "", nil)
	res := modernCall(p, 11, "destructive_query", del, asked["requestState"].(string), yes)
	if text := resultText(res); !strings.HasPrefix(text, "ok: 2 rows affected; snapshot: ") {
		t.Fatalf("allowed retry: %v", res)
	}
}

// legacyAsking is a raw 2025-11-25 client that declares elicitation.
func legacyAsking(t *testing.T, db string, flags ...string) *rawServer {
	t.Helper()
	p := startRawInit(t, db, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"1"}}}`, flags...)
	return p
}

// readRequest reads until the server's request of method.
func (p *rawServer) readRequest(method string) map[string]any {
	for {
		var msg map[string]any
		if json.Unmarshal([]byte(p.read()), &msg) == nil && msg["method"] == method && msg["id"] != nil {
			return msg
		}
	}
}

// askingToDrop starts a 2025 client's server on db, makes table t and
// calls destructive_query to drop it (request id 3); it returns the server
// and the question it sent.
func askingToDrop(t *testing.T, db string) (*rawServer, map[string]any) {
	t.Helper()
	p := legacyAsking(t, db)
	p.callLine(2, "write_query", q("CREATE TABLE t (x)"))
	p.readUntil(2)
	p.callLine(3, "destructive_query", map[string]any{"query": "DROP TABLE t", "reason": "cleanup"})
	return p, p.readRequest("elicitation/create")
}

func TestConfirmCancelledWhileAsking(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	p, req := askingToDrop(t, db)
	if msg, _ := req["params"].(map[string]any)["message"].(string); !strings.Contains(msg, "DROP TABLE t") {
		t.Fatalf("question %v", req)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"user pressed stop"}}`)
	p.send(`{"jsonrpc":"2.0","id":4,"method":"ping"}`)
	if seen := p.readUntil(4); !slices.Equal(seen, []int{4}) {
		t.Fatalf("responses %v: the cancelled call was answered", seen)
	}
	waitAudit(t, db, "CANCELLED: cancelled by the client")
	var n int
	if err := openDirect(t, db).QueryRow("SELECT count(*) FROM sqlite_schema WHERE name = 't'").Scan(&n); err != nil || n != 1 {
		t.Fatalf("table t after the cancelled DROP: %d %v", n, err)
	}
}

func TestConfirmShutdownWhileAsking(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	p, _ := askingToDrop(t, db)
	closeWhileAsking(t, p)
	waitAudit(t, db, "CANCELLED: server shutting down")
}

// closeWhileAsking closes the server's stdin while a question waits and
// requires a clean exit within 5 s.
func closeWhileAsking(t *testing.T, p *rawServer) {
	t.Helper()
	p.in.Close()
	done := make(chan error, 1)
	go func() { done <- p.wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("server exit: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the server did not exit while a question waited")
	}
}

// TestConfirmProgressDuringDryRun: a dry run that takes seconds sends
// progress notifications before the question comes.
func TestConfirmProgressDuringDryRun(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	var progressBeforeQuestion atomic.Int32
	var asked atomic.Bool
	a := &asker{answer: func(context.Context, mcp.ElicitationParams) (*mcp.ElicitationResult, error) {
		asked.Store(true)
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionDecline}}, nil
	}}
	s := startAsking(t, db, mcp.ProtocolVersion20251125, a)
	s.c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationProgress) && !asked.Load() {
			progressBeforeQuestion.Add(1)
		}
	})
	s.ok("write_query", q("CREATE TABLE t (x)"))
	s.ok("write_query", q("INSERT INTO t VALUES (1)"))
	req := mcp.CallToolRequest{}
	req.Params.Name = "destructive_query"
	req.Params.Arguments = map[string]any{"reason": "slow", "query": "DELETE FROM t WHERE x IN (SELECT count(*) FROM (WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 6000000) SELECT i FROM c))"}
	req.Params.Meta = &mcp.Meta{ProgressToken: "dry"}
	res, err := s.c.CallTool(context.Background(), req)
	if err != nil || !res.IsError {
		t.Fatalf("got %+v %v, want DECLINED", res, err)
	}
	if progressBeforeQuestion.Load() < 1 {
		t.Fatal("no progress notification during the dry run")
	}
}

// TestConfirmShutdownWhileModernAsks: a question handed to a 2026-07-28
// client and never answered is audited CANCELLED when the server stops.
func TestConfirmShutdownWhileModernAsks(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": map[string]any{"_meta": modernMeta}})
	p := startRawInit(t, db, string(b))
	modernCall(p, 2, "write_query", q("CREATE TABLE t (x)"), "", nil)
	if asked := modernCall(p, 3, "destructive_query", map[string]any{"query": "DROP TABLE t", "reason": "cleanup"}, "", nil); asked["resultType"] != "input_required" {
		t.Fatalf("first round: %v", asked)
	}
	closeWhileAsking(t, p)
	row := waitAudit(t, db, "CANCELLED: server shutting down")
	if row.tool != "destructive_query" || !strings.Contains(row.detail, "DROP TABLE") {
		t.Fatalf("audit row %+v", row)
	}
}
