package worker

import (
	"strconv"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/render"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/worker/search"
)

// defaultCandidateCap applies when a request names no cap (a hand-written
// request to mcp-sqlite-memory-worker); the front always sends --search-candidates.
const defaultCandidateCap = 5000

// search answers search_text: the candidate SELECT, built from checked and
// quoted names plus the agent's where text, runs under the read policy;
// the pattern is matched here, value by value, with Go's RE2 engine.
func (ex *executor) search() (*ipc.Response, error) {
	sr := ex.req.Search
	if sr == nil {
		return nil, errcode.New(errcode.InvalidArgument, "search_text request has no search settings")
	}
	re, err := search.Compile(sr.Pattern, sr.IgnoreCase, sr.FixedStrings)
	if err != nil {
		return nil, err
	}
	obj, err := ex.searchObject(sr.Table)
	if err != nil {
		return nil, err
	}
	candidateCap := sr.CandidateCap
	if candidateCap <= 0 {
		candidateCap = ex.req.Caps.SearchCandidates
	}
	if candidateCap <= 0 {
		candidateCap = defaultCandidateCap
	}
	plan, err := search.NewPlan(obj, sr.Columns, sr.KeyColumn, sr.Where, candidateCap)
	if err != nil {
		return nil, err
	}
	ex.detail = &ipc.Detail{SQL: plan.SQL}
	st, text, err := ex.compile(plan.SQL)
	if err != nil {
		return nil, err
	}
	defer st.Finalize()
	// SQLite accepted one statement; now make sure the where text did not
	// reshape it (a ")" closing our parenthesis, then UNION ...).
	if err := search.CheckWhere(sr.Where); err != nil {
		return nil, err
	}
	if st.ColumnCount() != 1+len(plan.Columns) || !st.Readonly() {
		return nil, errcode.New(errcode.InvalidArgument, "where must be a condition on the rows of "+obj.Name+"; it changed the shape of the query")
	}

	limit := sr.Limit
	if limit <= 0 {
		limit = 100
	}
	caps := ex.caps()
	caps.Limit, caps.Offset = limit, 0
	out := render.NewCSV(caps, []string{"key", "column", "snippet"})
	t := search.Totals{Columns: len(plan.Columns), CandidateCap: candidateCap}
	row := make([]render.Value, 3)
	writing := true
	for {
		ok, err := ex.stepAgent(st)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		if t.Candidates == candidateCap {
			t.CapHit = true
			break
		}
		t.Candidates++
		if t.Candidates%256 == 0 {
			ex.progress.report(ipc.Progress{Phase: ipc.PhaseSearch, Done: int64(t.Candidates), Total: int64(candidateCap)}, false)
		}
		rowMatched := false
		for i, name := range plan.Columns {
			if ex.timedOut.Load() {
				// A long value can keep the matcher busy between steps.
				return nil, &rawsqlite.Error{Code: rawsqlite.ResultInterrupt, Msg: "interrupted"}
			}
			v, ok := searchable(st, i+1)
			if !ok {
				continue
			}
			v = search.MarkNewlines(v)
			if !writing {
				if re.MatchString(v) {
					t.Matches++
					rowMatched = true
				}
				continue
			}
			loc := re.FindStringIndex(v)
			if loc == nil {
				continue
			}
			t.Matches++
			rowMatched = true
			row[0] = keyValue(st)
			row[1] = render.Value{Kind: render.Text, Text: name}
			row[2] = render.Value{Kind: render.Text, Text: search.Snippet(v, loc[0], loc[1], sr.ContextChars)}
			if !out.Add(row) || out.Rows() == limit {
				// Past the limit or the byte cap: go on counting only.
				writing = false
			}
		}
		if rowMatched {
			t.MatchingRows++
		}
	}
	t.Returned = out.Rows()
	if out.Truncated() {
		t.TruncatedAt = caps.MaxBytes
	}
	body := search.AppendTrailer(out.Body(), t)
	return &ipc.Response{
		Text: string(body),
		Rows: int64(t.Returned),
		Detail: &ipc.Detail{
			SQL:    text,
			Search: sr,
			Scan: &ipc.SearchScan{
				Columns: plan.Columns, Key: plan.Key, CandidateRows: t.Candidates,
				MatchingValues: t.Matches, MatchingRows: t.MatchingRows, CandidateCapHit: t.CapHit,
			},
		},
	}, nil
}

// searchObject resolves the table or view and reads its columns.
func (ex *executor) searchObject(name string) (search.Object, error) {
	o, err := ex.findTable(name)
	if err != nil {
		return search.Object{}, err
	}
	obj := search.Object{Name: o.name, View: o.typ == "view"}
	if !obj.View {
		err := ex.each("SELECT wr FROM pragma_table_list WHERE schema = 'main' AND name = ?1", func(st *rawsqlite.Stmt) error {
			obj.WithoutRowid = st.ColumnInt64(0) != 0
			return nil
		}, o.name)
		if err != nil {
			return search.Object{}, ex.classify(err)
		}
	}
	cols, err := ex.columns(o.name)
	if err != nil {
		return search.Object{}, ex.classify(err)
	}
	for _, c := range cols {
		obj.Columns = append(obj.Columns, search.Column{Name: c.name, Type: c.typ})
	}
	return obj, nil
}

// searchable returns column i of the current row as the text to search:
// TEXT as stored, numbers as read_query prints them; NULL and BLOB values
// are not searched.
func searchable(st *rawsqlite.Stmt, i int) (string, bool) {
	switch st.ColumnType(i) {
	case rawsqlite.TypeText:
		return st.ColumnText(i), true
	case rawsqlite.TypeInteger:
		return strconv.FormatInt(st.ColumnInt64(i), 10), true
	case rawsqlite.TypeFloat:
		return render.FormatReal(st.ColumnDouble(i)), true
	}
	return "", false
}

// keyValue reads the key (column 0) with its own storage class.
func keyValue(st *rawsqlite.Stmt) render.Value {
	var v [1]render.Value
	readRow(st, v[:1])
	return v[0]
}
