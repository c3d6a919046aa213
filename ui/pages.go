package ui

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/memory"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/portable"
)

// page is what the layout shows around a page's own data.
type page struct {
	Title   string
	Nav     string // the current page, for the menu
	Base    string
	DB      string
	Problem string // a bad filter, said at the top
	Data    any
}

// render executes a page into a buffer first, so a failure mid-page is a
// clean 500, not half a page.
func (u *UI) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	p.Base, p.DB = u.opt.Base, u.abs
	var b bytes.Buffer
	if err := u.pages[name].ExecuteTemplate(&b, "layout", p); err != nil {
		u.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

func (u *UI) fail(w http.ResponseWriter, r *http.Request, err error) {
	u.opt.Log.Warn("ui: page failed", "path", r.URL.Path, "error", err)
	status := http.StatusInternalServerError
	if memoryBusy(err) {
		status = http.StatusServiceUnavailable
	}
	http.Error(w, "the page could not be read: "+err.Error(), status)
}

func memoryBusy(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "database is locked") || strings.Contains(err.Error(), "busy"))
}

func (u *UI) ctx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), u.opt.Timeout)
}

// link is a URL of a page with the given query (empty values left out).
func (u *UI) link(path string, q url.Values) string {
	for k, v := range q {
		if len(v) == 0 || v[0] == "" {
			delete(q, k)
		}
	}
	s := u.opt.Base + path
	if len(q) > 0 {
		s += "?" + q.Encode()
	}
	return s
}

type timelineData struct {
	F        timelineFilter
	From, To string
	timelineResult
	NextURL string
}

func parseDay(s string) (time.Time, bool) {
	if s == "" {
		return time.Time{}, true
	}
	t, err := time.Parse("2006-01-02", s)
	return t, err == nil
}

func parseID(s string) (int64, bool) {
	if s == "" {
		return 0, true
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n > 0
}

func (u *UI) timeline(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	d := timelineData{From: q.Get("from"), To: q.Get("to")}
	f := &d.F
	f.Kind, f.Agent, f.Query = strings.TrimSpace(q.Get("kind")), strings.TrimSpace(q.Get("agent")), strings.TrimSpace(q.Get("q"))
	var problems []string
	var ok bool
	if f.From, ok = parseDay(d.From); !ok {
		problems = append(problems, "from is not a date (YYYY-MM-DD)")
	}
	if f.To, ok = parseDay(d.To); !ok {
		problems = append(problems, "to is not a date (YYYY-MM-DD)")
	}
	if f.Before, ok = parseID(q.Get("before")); !ok {
		problems = append(problems, "before is not an event id")
	}
	if o := q.Get("offset"); o != "" {
		n, err := strconv.Atoi(o)
		if err != nil || n < 0 || n > maxSearchOffset {
			problems = append(problems, "offset is not a number from 0 to "+strconv.Itoa(maxSearchOffset))
		} else {
			f.Offset = n
		}
	}
	p := page{Title: "Timeline", Nav: "timeline", Data: &d}
	if len(problems) > 0 {
		p.Problem = strings.Join(problems, "; ")
		u.render(w, r, http.StatusBadRequest, "timeline", p)
		return
	}
	ctx, cancel := u.ctx(r)
	defer cancel()
	res, err := u.readTimeline(ctx, *f)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	d.timelineResult = res
	next := url.Values{"kind": {f.Kind}, "agent": {f.Agent}, "q": {f.Query}, "from": {d.From}, "to": {d.To}}
	switch {
	case res.Next > 0:
		next.Set("before", strconv.FormatInt(res.Next, 10))
		d.NextURL = u.link("/", next)
	case res.NextOffset > 0:
		next.Set("offset", strconv.Itoa(res.NextOffset))
		d.NextURL = u.link("/", next)
	}
	u.render(w, r, http.StatusOK, "timeline", p)
}

type chainData struct {
	V          memory.Verification
	Meaning    string
	Checkpoint memory.Checkpoint
	HasCP      bool
	ExportURL  string
}

func (u *UI) chain(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := u.ctx(r)
	defer cancel()
	v, err := u.store.Verify(ctx)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	d := chainData{V: v, ExportURL: u.opt.Base + "/export.jsonl"}
	if d.Checkpoint, d.HasCP, err = u.store.LatestCheckpoint(ctx); err != nil {
		u.fail(w, r, err)
		return
	}
	if !v.OK {
		d.Meaning = "Events 1 to " + strconv.FormatInt(v.BreakAtID-1, 10) + " are as the server wrote them. From event " +
			strconv.FormatInt(v.BreakAtID, 10) + " on, the log is not what the server wrote: a row was changed, deleted or inserted by " +
			"something other than the server (the chain is tamper-evident, not tamper-proof). Compare with an older export or snapshot " +
			"to see what changed; the server keeps appending after the break."
	}
	u.render(w, r, http.StatusOK, "chain", page{Title: "Chain", Nav: "chain", Data: d})
}

// export sends the JSON Lines export, the same bytes as the export
// command writes.
func (u *UI) export(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithCancel(r.Context()) // a long export is not cut by the page timeout
	defer cancel()
	h := w.Header()
	h.Set("Content-Type", "application/jsonl; charset=utf-8")
	h.Set("Content-Disposition", `attachment; filename="`+strings.Map(func(r rune) rune {
		if r < 0x20 || r == '"' || r == '\\' || r > 0x7e {
			return '_'
		}
		return r
	}, u.opt.Stem)+`.jsonl"`)
	if _, err := portable.Export(ctx, u.store, w, nil); err != nil {
		u.opt.Log.Warn("ui: export failed", "error", err)
	}
}

type activityData struct {
	F activityFilter
	activityResult
	NextURL string
}

func (u *UI) activity(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	d := activityData{}
	f := &d.F
	f.Errors, f.Destructive = q.Get("errors") != "", q.Get("destructive") != ""
	f.Tool, f.Agent = strings.TrimSpace(q.Get("tool")), strings.TrimSpace(q.Get("agent"))
	p := page{Title: "Activity", Nav: "activity", Data: &d}
	var ok bool
	if f.Before, ok = parseID(q.Get("before")); !ok {
		p.Problem = "before is not an audit row id"
		u.render(w, r, http.StatusBadRequest, "activity", p)
		return
	}
	ctx, cancel := u.ctx(r)
	defer cancel()
	res, err := u.readActivity(ctx, *f)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	d.activityResult = res
	if res.Next > 0 {
		next := url.Values{"tool": {f.Tool}, "agent": {f.Agent}, "before": {strconv.FormatInt(res.Next, 10)}}
		if f.Errors {
			next.Set("errors", "1")
		}
		if f.Destructive {
			next.Set("destructive", "1")
		}
		d.NextURL = u.link("/activity", next)
	}
	u.render(w, r, http.StatusOK, "activity", p)
}

type snapshotsData struct {
	Dir   string
	Items []snapshotFile
}

func (u *UI) snapshots(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := u.ctx(r)
	defer cancel()
	items, err := u.readSnapshots(ctx)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	u.render(w, r, http.StatusOK, "snapshots", page{Title: "Snapshots", Nav: "snapshots", Data: snapshotsData{Dir: u.opt.SnapshotDir, Items: items}})
}

func (u *UI) tables(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := u.ctx(r)
	defer cancel()
	objs, err := u.readTables(ctx)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	u.render(w, r, http.StatusOK, "tables", page{Title: "Tables", Nav: "tables", Data: objs})
}
