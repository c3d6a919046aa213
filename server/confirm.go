package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/config"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
)

// Confirmation by the person (SPEC 5.5). Before a statement that destroys
// or overwrites data runs, a worker dry-runs it (ipc.PreviewRequest) and
// the server asks the person through one MCP elicitation form that states
// what the dry run measured. Only an explicit yes runs it.
//
// Two protocol generations ask differently:
//   - a client that connected with initialize (2025-06-18, 2025-11-25)
//     gets an elicitation/create request while the call waits, for at most
//     --confirm-timeout;
//   - a 2026-07-28 client gets an input_required result; it asks the person
//     and retries the call with the answer (inputResponses) and the
//     requestState this server handed out, which names a pending question
//     kept here until it is answered or --confirm-timeout passes.
//
// The answer comes from the client only, never from the agent's
// arguments.

// elicitationKey names the one question in an input_required result.
const elicitationKey = "confirm"

// allowField is the form's one boolean field.
const allowField = "allow"

// declinedMessage is what the agent reads when the statement did not run.
const declinedMessage = "the user did not allow this statement; nothing was changed"

// Answers recorded in the audit row's detail.
const (
	answerAccept   = "accept"
	answerFalse    = "accept with allow=false"
	answerDecline  = "decline"
	answerCancel   = "cancel"
	answerTimeout  = "no answer within --confirm-timeout"
	answerError    = "the client failed to ask"
	answerExpired  = "answer to an unknown or expired question"
	answerMismatch = "answer to another statement"
	answerForeign  = "answer to another agent's question (left for that agent)"
)

// Limits of what the form shows.
const (
	maxShownStatement = 300
	maxShownReason    = 300
	maxShownName      = 64
	maxShownTables    = 8
)

// confirmation is one statement waiting for the person's answer.
type confirmation struct {
	tool    string
	digest  string // sha256 of the call's arguments, so an answer fits only its call
	preview *ipc.Preview
	message string
}

// pendingConfirms holds the questions handed to 2026-07-28 clients.
type pendingConfirms struct {
	mu      sync.Mutex
	pending map[string]*pendingConfirm
}

type pendingConfirm struct {
	confirmation
	// agent asked the question: only its token may answer it, or use it
	// up (takeFor).
	agent string
	timer *time.Timer
	// expire audits the question as unanswered; it runs at most once.
	expire func(err error)
}

// mustConfirm reports whether a call of tool is confirmed under --confirm.
func (s *Server) mustConfirm(tool string) bool {
	switch s.cfg.Confirm {
	case config.ConfirmOff, "":
		return false
	case config.ConfirmWrites:
		return true
	}
	return tool == "destructive_query"
}

// clientCanAsk reports whether the client of the call declared form-mode
// elicitation, and whether it speaks 2026-07-28 (input_required).
func clientCanAsk(ctx context.Context) (can, modern bool) {
	if info := mcpserver.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		return info.ClientCapabilities != nil && formElicitation(info.ClientCapabilities.Elicitation), true
	}
	session := mcpserver.ClientSessionFromContext(ctx)
	if _, ok := session.(mcpserver.SessionWithElicitation); !ok {
		return false, false
	}
	withInfo, ok := session.(mcpserver.SessionWithClientInfo)
	if !ok {
		return false, false
	}
	caps := withInfo.GetClientCapabilities()
	return formElicitation(caps.Elicitation), false
}

// formElicitation: an empty elicitation capability means form mode (the
// 2025-06-18 form); a client that offers only URL mode cannot show a form.
func formElicitation(c *mcp.ElicitationCapability) bool {
	return c != nil && (c.Form != nil || c.URL == nil)
}

// confirmed runs req after the person allowed it, or answers DECLINED. A
// client that cannot ask runs it as before (with --confirm required,
// destructive_query is refused instead). preview dry-runs the statement
// first and shows what it would change; without it (create_view) the form
// says what the call does. argsDigest binds a 2026-07-28 answer to these
// arguments.
func (s *Server) confirmed(c *call, tool string, req *ipc.Request, reason, argsDigest string, preview bool) (outcome, error) {
	if !s.mustConfirm(tool) {
		return s.answer(c, req)
	}
	can, modern := clientCanAsk(c.ctx)
	if !can {
		if s.cfg.Confirm == config.ConfirmRequired && tool == "destructive_query" {
			c.detail["confirm"] = map[string]any{"answer": "not asked: the client cannot ask the person"}
			return outcome{}, errcode.New(errcode.Policy, "this server is set to --confirm required: destructive_query runs only after the person allows it, and this MCP client cannot ask (it did not declare the elicitation capability). Nothing was changed. Use a client that supports elicitation forms (Claude Code, VS Code), or ask the person to restart the server with --confirm destructive to rely on the host's own permission prompt")
		}
		s.cantAskOnce.Do(func() {
			s.log.Warn("this MCP client cannot ask the person (no elicitation capability): destructive statements run without the server's confirmation; the host's own permission prompt is the lock", "confirm", s.cfg.Confirm)
		})
		return s.answer(c, req)
	}
	if modern && (c.roundTrip.RequestState != "" || len(c.roundTrip.InputResponses) > 0) {
		return s.answered(c, tool, req, argsDigest)
	}

	var p *ipc.Preview
	if preview && s.cluster == nil {
		dry := *req
		dry.Preview = &ipc.PreviewRequest{CommitIfHarmless: req.Snapshot == nil}
		if req.Snapshot != nil {
			snap := *req.Snapshot
			dry.Snapshot = &snap
		}
		resp, err := s.run(c, &dry)
		if err != nil {
			// A dry run that fails answers the statement's error.
			return outcome{}, err
		}
		if resp.Preview == nil {
			// Nothing to confirm: a read, or a write that overwrote
			// nothing and was committed as the real run.
			c.detail["confirm"] = map[string]any{"answer": "not asked: the statement overwrites nothing"}
			return outcome{text: resp.Text, json: resp.JSON}, nil
		}
		p = resp.Preview
		// The dry run's row count is not the call's.
		c.rows = sql.NullInt64{}
	}
	conf := confirmation{tool: tool, digest: argsDigest, preview: p,
		message: confirmMessage(tool, req, reason, p)}
	if modern {
		return s.askLater(c, conf)
	}
	answer, err := s.askNow(c, conf)
	if err != nil {
		return outcome{}, err
	}
	return s.afterAnswer(c, conf, req, answer)
}

// askNow sends elicitation/create and waits for the answer, at most
// --confirm-timeout. A call cancelled or stopped by shutdown meanwhile
// returns its context's error (no response, audited CANCELLED).
func (s *Server) askNow(c *call, conf confirmation) (string, error) {
	ctx, cancel := context.WithTimeout(c.ctx, s.cfg.ConfirmTimeout)
	defer cancel()
	c.progress.waiting(time.Now().Add(s.cfg.ConfirmTimeout))
	res, err := s.mcp.RequestElicitation(ctx, mcp.ElicitationRequest{
		Request: mcp.Request{Method: string(mcp.MethodElicitationCreate)},
		Params:  confirmForm(conf.message),
	})
	c.progress.running()
	if c.ctx.Err() != nil {
		return "", c.ctx.Err()
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return answerTimeout, nil
	case err != nil:
		s.log.Warn("asking the person failed; the statement is declined", "tool", conf.tool, "error", err)
		return answerError, nil
	}
	return answerOf(res), nil
}

// answerOf reads an elicitation result: only accept with allow=true is a
// yes.
func answerOf(res *mcp.ElicitationResult) string {
	if res == nil {
		return answerError
	}
	switch res.Action {
	case mcp.ElicitationResponseActionAccept:
		if content, ok := res.Content.(map[string]any); ok {
			if allow, ok := content[allowField].(bool); ok && allow {
				return answerAccept
			}
		}
		return answerFalse
	case mcp.ElicitationResponseActionDecline:
		return answerDecline
	}
	return answerCancel
}

// afterAnswer runs req on a yes and declines otherwise; the audit row's
// detail holds the preview and the answer.
func (s *Server) afterAnswer(c *call, conf confirmation, req *ipc.Request, answer string) (outcome, error) {
	detail := map[string]any{"answer": answer, "message": conf.message}
	if conf.preview != nil {
		detail["preview"] = conf.preview
	}
	c.detail["confirm"] = detail
	if answer != answerAccept {
		msg := declinedMessage
		if answer == answerTimeout {
			msg += fmt.Sprintf(" (no answer within %s)", roundSeconds(s.cfg.ConfirmTimeout))
		}
		return outcome{}, errcode.New(errcode.Declined, msg)
	}
	if s.cluster != nil {
		// Cluster mode: no preview to compare with; the statement goes
		// the cluster's way (judged, then one request).
		return s.answer(c, req)
	}
	if conf.preview != nil {
		req.Recount = nil
		for _, t := range conf.preview.Tables {
			if t.Net && !slices.Contains(req.Recount, t.Table) {
				req.Recount = append(req.Recount, t.Table)
			}
		}
	}
	resp, err := s.run(c, req)
	if err != nil {
		return outcome{}, err
	}
	var notes []string
	if p := conf.preview; p != nil && resp.Rows != p.Changes {
		detail["rows_differ"] = true
		notes = append(notes, fmt.Sprintf("note: the preview the user allowed counted %d rows, the statement changed %d (the database changed in between)", p.Changes, resp.Rows))
	}
	if p := conf.preview; p != nil {
		for _, t := range p.Tables {
			got, ok := resp.Recounted[t.Table]
			if !t.Net || !ok || got == t.Inserted-t.Deleted {
				continue
			}
			detail["rows_differ"] = true
			notes = append(notes, fmt.Sprintf("note: the preview the user allowed said the statement %s, it %s (the database changed in between)",
				netText(t.Inserted-t.Deleted, t.Table, true), netText(got, t.Table, false)))
		}
	}
	if p := conf.preview; p != nil && uncountedNote(p) != "" {
		detail["rows_uncounted"] = true
		notes = append(notes, fmt.Sprintf("note: the preview the user allowed could not count every row of a virtual table (it said so); the statement itself changed %d rows", resp.Rows))
	}
	text := resp.Text
	if len(notes) > 0 {
		// The first line is the result line; RETURNING rows follow it.
		line, rest, more := strings.Cut(text, "\n")
		line += "; " + strings.Join(notes, "; ")
		if more {
			line += "\n" + rest
		}
		text = line
	}
	return outcome{text: text, json: resp.JSON}, nil
}

// askLater hands a 2026-07-28 client the question as an input_required
// result and keeps it until the retry, at most --confirm-timeout.
func (s *Server) askLater(c *call, conf confirmation) (outcome, error) {
	token, err := newToken()
	if err != nil {
		return outcome{}, errcode.New(errcode.WorkerFailed, "could not ask the person: "+err.Error())
	}
	start := time.Now()
	query := c.query
	pc := &pendingConfirm{confirmation: conf, agent: c.agent}
	var once sync.Once
	pc.expire = func(err error) {
		once.Do(func() {
			detail := map[string]any{"answer": answerTimeout, "message": conf.message, "round": "expired"}
			if conf.preview != nil {
				detail["preview"] = conf.preview
			}
			s.audit(conf.tool, start, &call{query: query, detail: detail, agent: c.agent}, err)
		})
	}
	s.confirms.mu.Lock()
	if s.confirms.pending == nil {
		s.confirms.pending = map[string]*pendingConfirm{}
	}
	s.confirms.pending[token] = pc
	pc.timer = time.AfterFunc(s.cfg.ConfirmTimeout, func() {
		if s.confirms.take(token) != nil {
			pc.expire(errcode.New(errcode.Declined, declinedMessage+" (no answer within "+roundSeconds(s.cfg.ConfirmTimeout)+")"))
		}
	})
	s.confirms.mu.Unlock()

	detail := map[string]any{"answer": "asked (input_required)", "message": conf.message}
	if conf.preview != nil {
		detail["preview"] = conf.preview
	}
	c.detail["confirm"] = detail
	res := mcpserver.NewInputRequestBuilder(token).Elicit(elicitationKey, confirmForm(conf.message)).ToolResult()
	return outcome{raw: res}, nil
}

// answered is a 2026-07-28 client's retry: the answer must belong to a
// question this server asked for exactly these arguments.
func (s *Server) answered(c *call, tool string, req *ipc.Request, argsDigest string) (outcome, error) {
	pc, foreign := s.confirms.takeFor(c.roundTrip.RequestState, c.agent)
	if pc == nil {
		// Another agent's question reads as unknown to this one, and
		// stays where it is for the agent it was asked for.
		answer := answerExpired
		if foreign {
			answer = answerForeign
		}
		c.detail["confirm"] = map[string]any{"answer": answer}
		return outcome{}, errcode.New(errcode.Declined, declinedMessage+" (the question was unknown or had expired; call again to be asked again)")
	}
	pc.timer.Stop()
	if pc.tool != tool || pc.digest != argsDigest {
		c.detail["confirm"] = map[string]any{"answer": answerMismatch}
		return outcome{}, errcode.New(errcode.Declined, declinedMessage+" (the answer was given for another statement; call again to be asked again)")
	}
	answer := answerCancel
	if res := mcpserver.ElicitationResponse(c.roundTrip.InputResponses, elicitationKey); res != nil {
		answer = answerOf(res)
	}
	return s.afterAnswer(c, pc.confirmation, req, answer)
}

// takeFor removes and returns the pending question of token if agent
// asked it. A question of another agent is left alone (foreign): a
// replayed requestState neither runs nor uses up the question.
func (p *pendingConfirms) takeFor(token, agent string) (pc *pendingConfirm, foreign bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pc = p.pending[token]
	if pc == nil {
		return nil, false
	}
	if pc.agent != agent {
		return nil, true
	}
	delete(p.pending, token)
	return pc, false
}

// take removes and returns the pending question of token, or nil.
func (p *pendingConfirms) take(token string) *pendingConfirm {
	p.mu.Lock()
	defer p.mu.Unlock()
	pc := p.pending[token]
	delete(p.pending, token)
	return pc
}

// closeAll audits every question still waiting as CANCELLED (shutdown).
func (p *pendingConfirms) closeAll() {
	p.mu.Lock()
	all := p.pending
	p.pending = nil
	p.mu.Unlock()
	for _, pc := range all {
		pc.timer.Stop()
		pc.expire(errcode.New(errcode.Cancelled, reasonShutdown))
	}
}

func newToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// argsDigest binds an answer to the call's arguments.
func argsDigest(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// confirmForm is the one form: the message and one boolean field.
func confirmForm(message string) mcp.ElicitationParams {
	return mcp.ElicitationParams{
		Mode:    mcp.ElicitationModeForm,
		Message: message,
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				allowField: map[string]any{
					"type":        "boolean",
					"title":       "Allow this statement",
					"description": "Yes runs it as described; anything else changes nothing.",
					"default":     false,
				},
			},
			"required": []string{allowField},
		},
	}
}

// confirmMessage states the facts: what the statement would change
// (counts, table and object names), the agent's reason, the snapshot, and
// the statement cut to a readable length. It never holds values read from
// rows.
func confirmMessage(tool string, req *ipc.Request, reason string, p *ipc.Preview) string {
	var b strings.Builder
	b.WriteString(tool + " wants to ")
	switch {
	case req.View != nil:
		fmt.Fprintf(&b, "replace the view %s with a new definition (the previous one is kept in the audit log)", quoted(req.View.Name, maxShownName))
	case p != nil:
		b.WriteString(effects(p))
	default:
		// Cluster mode: no dry run on the node's read-only copy, so no
		// count of what it would change (docs/cluster.md).
		b.WriteString("run a statement whose effect this server cannot count beforehand in cluster mode")
	}
	b.WriteString(".")
	if p != nil {
		b.WriteString(uncountedNote(p))
	}
	if reason != "" {
		fmt.Fprintf(&b, " Reason: %s.", quoted(strings.TrimSpace(reason), maxShownReason))
	}
	switch {
	case req.Snapshot == nil:
		b.WriteString(" No snapshot is taken.")
	case p != nil && p.Snapshot != nil && p.Snapshot.Kind == ipc.SnapshotUndo:
		fmt.Fprintf(&b, " An undo record of the rows and objects it changes is taken first (the database is %s).", sizeText(p.Snapshot.Bytes))
	case p != nil && p.Snapshot != nil:
		fmt.Fprintf(&b, " A %s snapshot is taken first.", sizeText(p.Snapshot.Bytes))
	case p == nil && req.Snapshot.Keep > 0:
		b.WriteString(" A snapshot (a copy of this server's node) is taken first.")
	default:
		b.WriteString(" No snapshot is taken (snapshots are disabled).")
	}
	b.WriteString(" Allow it?")
	sql := req.SQL
	if req.View != nil {
		sql = req.View.Select
	}
	fmt.Fprintf(&b, "\n\nStatement: %s", shown(sql, maxShownStatement))
	return b.String()
}

// effects lists the dry run's changes: "DELETE 120 rows from orders and 3
// rows from order_items (ON DELETE CASCADE)".
func effects(p *ipc.Preview) string {
	type part struct{ verb, text string }
	var parts []part
	for _, o := range p.Objects {
		text := o.Type + " " + quoted(o.Name, maxShownName)
		if o.Table != "" {
			text += " ON " + quoted(o.Table, maxShownName)
		}
		if o.Action == ipc.ObjectDrop && o.Rows > 0 {
			text += " (" + rowsText(o.Rows) + ")"
		}
		parts = append(parts, part{o.Action, text})
	}
	for i, t := range p.Tables {
		if i == maxShownTables {
			parts = append(parts, part{"", fmt.Sprintf("change rows in %d more tables", len(p.Tables)-i)})
			break
		}
		via := ""
		switch {
		case len(t.Triggers) > 0:
			names := make([]string, len(t.Triggers))
			for i, n := range t.Triggers {
				names[i] = quoted(n, maxShownName)
			}
			via = " (trigger " + strings.Join(names, ", ") + ")"
		case t.Via != "":
			via = " (" + shown(t.Via, 2*maxShownName) + ")"
		}
		name := quoted(t.Table, maxShownName)
		count := rowsText
		if t.Uncounted {
			count = func(n int64) string { return "at least " + rowsText(n) }
		}
		if t.Deleted > 0 {
			parts = append(parts, part{"DELETE", count(t.Deleted) + " from " + name + via})
		}
		if t.Updated > 0 {
			parts = append(parts, part{"UPDATE", count(t.Updated) + " in " + name + via})
		}
		if t.Inserted > 0 {
			parts = append(parts, part{"INSERT", count(t.Inserted) + " into " + name + via})
		}
		if t.Uncounted && t.Deleted == 0 && t.Updated == 0 && t.Inserted == 0 {
			parts = append(parts, part{"", "change an unknown number of rows in " + name + via})
		}
	}
	// A backstop: the statement's own count (sqlite3_changes) is never
	// shown as less than it is, whatever the table counts missed.
	var own int64
	uncounted := false
	for _, t := range p.Tables {
		if t.Via == "" {
			own += t.Deleted + t.Updated + t.Inserted
			uncounted = uncounted || t.Uncounted
		}
	}
	if !uncounted && p.Changes > own {
		parts = append(parts, part{"", "change " + rowsText(p.Changes-own) + " the dry run could not assign to a table"})
	}
	if len(parts) == 0 {
		return "run a statement that would change no rows now"
	}
	texts := make([]string, len(parts))
	for i, pt := range parts {
		texts[i] = pt.text
		if pt.verb != "" && (i == 0 || parts[i-1].verb != pt.verb) {
			texts[i] = pt.verb + " " + pt.text
		}
	}
	if len(texts) == 1 {
		return texts[0]
	}
	return strings.Join(texts[:len(texts)-1], ", ") + " and " + texts[len(texts)-1]
}

func rowsText(n int64) string {
	if n == 1 {
		return "1 row"
	}
	return fmt.Sprintf("%d rows", n)
}

// sizeText is a size as a person reads it: 12 MB, 3.4 MB, 800 KB.
func sizeText(n int64) string {
	units := []string{"bytes", "KB", "MB", "GB", "TB"}
	f := float64(n)
	i := 0
	for f >= 1000 && i < len(units)-1 {
		f /= 1000
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%d-byte", n)
	}
	if f < 10 {
		return fmt.Sprintf("%.1f %s", f, units[i])
	}
	return fmt.Sprintf("%.0f %s", f, units[i])
}

// netText says what a net change of n rows does to table: "would delete
// 30 rows from "idx"" for the preview, "deleted 31 rows from "idx"" for
// the real run.
func netText(n int64, table string, preview bool) string {
	name := quoted(table, maxShownName)
	verbs := [3]string{"deleted", "inserted", "changed no rows of"}
	if preview {
		verbs = [3]string{"would delete", "would insert", "would change no rows of"}
	}
	switch {
	case n < 0:
		return verbs[0] + " " + rowsText(-n) + " from " + name
	case n > 0:
		return verbs[1] + " " + rowsText(n) + " into " + name
	}
	return verbs[2] + " " + name
}

// uncountedNote says plainly which virtual tables the dry run could not
// fully count, or "".
func uncountedNote(p *ipc.Preview) string {
	var names []string
	for _, t := range p.Tables {
		if t.Uncounted {
			if n := quoted(t.Table, maxShownName); !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	switch len(names) {
	case 0:
		return ""
	case 1:
		return " The dry run cannot count every row this changes in the virtual table " + names[0] + ": more rows may change."
	}
	return " The dry run cannot count every row this changes in the virtual tables " + strings.Join(names, ", ") + ": more rows may change."
}

// shown is text for the form (the statement), cut to max characters with
// an ellipsis: see escaped.
func shown(s string, max int) string { return escaped(s, max, false) }

// quoted is a name or the agent's reason for the form, in double quotes:
// see escaped.
func quoted(s string, max int) string { return escaped(s, max, true) }

// escaped is the one way agent-written text reaches the form: line breaks
// and other control characters become spaces; characters that change how
// the text around them reads without showing themselves (bidi controls,
// zero-width and other format characters, unusual spaces, anything
// unprintable) are written as \u escapes; the text is cut to max
// characters with an ellipsis. With quote it is put in double quotes with
// " and \ escaped, so that no table name or reason can end its quotes and
// read as the server's own words.
func escaped(s string, max int, quote bool) string {
	if !quote {
		s = strings.TrimSpace(s)
	}
	r := []rune(s)
	cut := len(r) > max
	if cut {
		r = r[:max]
	}
	var b strings.Builder
	if quote {
		b.WriteByte('"')
	}
	for _, c := range r {
		switch {
		case unicode.IsControl(c) || c == '\u2028' || c == '\u2029':
			b.WriteByte(' ')
		case quote && (c == '"' || c == '\\'):
			b.WriteByte('\\')
			b.WriteRune(c)
		case c == ' ' || strconv.IsPrint(c):
			b.WriteRune(c)
		case c > 0xffff:
			fmt.Fprintf(&b, `\U%08x`, c)
		default:
			fmt.Fprintf(&b, `\u%04x`, c)
		}
	}
	if cut {
		b.WriteString("…")
	}
	if quote {
		b.WriteByte('"')
	}
	return b.String()
}
