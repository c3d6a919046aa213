package ui

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/memory"
)

// The activity chart: calls per hour by tool over the 24 hours that end
// with the newest call (of the filtered calls), with the error share, drawn
// here as SVG (no script in the page), and each tool's p50 and p95
// durations.

// chartMax bounds the calls the chart reads.
const chartMax = 20_000

// chartHours is the window's length.
const chartHours = 24

// palette colours the tools, in order of their calls; fixed strings, never
// agent text, so attributes need no escaping beyond the template's.
var palette = []string{"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#ff9da7", "#86bcb6", "#d37295", "#a0cbe8", "#bab0ac"}

const (
	chartW, chartH = 720, 180
	chartTop       = 10
	chartBottom    = 30 // hour labels
	chartLeft      = 40 // call counts
)

type chart struct {
	From, To string
	Calls    int
	Capped   bool
	W, H     int
	Bars     []bar
	Labels   []label
	Tools    []toolStat
	Max      int
	P50, P95 int64
}

type bar struct {
	Title string
	Segs  []rect
	Err   *rect
}

type rect struct {
	X, Y, W, H int
	Fill       string
	Title      string
}

type label struct {
	X, Y int
	Text string
}

type toolStat struct {
	Tool     string
	Fill     string
	Calls    int
	Errors   int
	Share    string
	P50, P95 int64
	durs     []int64
}

func readChart(ctx context.Context, tx *rtx, where []string, args []any) (chart, error) {
	c := chart{W: chartW, H: chartH}
	var newest sql.NullString
	// The newest by id: a walk back from the end of the table that stops
	// at the first row the filters keep (max(ts) with a filter scans).
	err := tx.QueryRowContext(ctx, `SELECT ts FROM query_log`+whereSQL(where)+` ORDER BY id DESC LIMIT 1`, args...).Scan(&newest)
	if errors.Is(err, sql.ErrNoRows) {
		return c, nil
	}
	if err != nil {
		return c, err
	}
	if !newest.Valid {
		return c, nil
	}
	end, err := time.Parse(memory.TimeLayout, newest.String)
	if err != nil {
		return c, nil // a ts the server did not write: no chart
	}
	end = end.Truncate(time.Hour).Add(time.Hour)
	start := end.Add(-chartHours * time.Hour)
	c.From, c.To = start.Format(memory.TimeLayout), end.Format(memory.TimeLayout)
	rows, err := tx.QueryContext(ctx, `SELECT ts, tool, ok, duration_ms FROM query_log`+
		whereSQL(append(slices.Clip(where), "ts >= ?"))+` ORDER BY ts DESC LIMIT ?`, append(slices.Clip(args), c.From, chartMax+1)...)
	if err != nil {
		return c, err
	}
	defer rows.Close()
	perHour := make([]map[string]*cell, chartHours)
	tools := map[string]*toolStat{}
	var all []int64
	for rows.Next() {
		var ts, tool string
		var ok bool
		var d int64
		if err := rows.Scan(&ts, &tool, &ok, &d); err != nil {
			return c, err
		}
		if c.Calls == chartMax {
			c.Capped = true
			break
		}
		t, err := time.Parse(memory.TimeLayout, ts)
		if err != nil || t.Before(start) || !t.Before(end) {
			continue
		}
		c.Calls++
		h := int(t.Sub(start) / time.Hour)
		if perHour[h] == nil {
			perHour[h] = map[string]*cell{}
		}
		if perHour[h][tool] == nil {
			perHour[h][tool] = &cell{}
		}
		perHour[h][tool].calls++
		st := tools[tool]
		if st == nil {
			st = &toolStat{Tool: tool}
			tools[tool] = st
		}
		st.Calls++
		st.durs = append(st.durs, d)
		all = append(all, d)
		if !ok {
			perHour[h][tool].errs++
			st.Errors++
		}
	}
	if err := rows.Err(); err != nil {
		return c, err
	}
	for _, st := range tools {
		c.Tools = append(c.Tools, *st)
	}
	sort.Slice(c.Tools, func(i, j int) bool {
		if c.Tools[i].Calls != c.Tools[j].Calls {
			return c.Tools[i].Calls > c.Tools[j].Calls
		}
		return c.Tools[i].Tool < c.Tools[j].Tool
	})
	fill := map[string]string{}
	for i := range c.Tools {
		st := &c.Tools[i]
		st.Fill = palette[min(i, len(palette)-1)]
		fill[st.Tool] = st.Fill
		st.P50, st.P95 = percentile(st.durs, 50), percentile(st.durs, 95)
		st.Share = share(st.Errors, st.Calls)
	}
	c.P50, c.P95 = percentile(all, 50), percentile(all, 95)
	for _, m := range perHour {
		n := 0
		for _, v := range m {
			n += v.calls
		}
		c.Max = max(c.Max, n)
	}
	c.draw(perHourCalls(perHour, c.Tools), start, fill)
	return c, nil
}

// cell is one tool's calls and errors in one hour.
type cell struct{ calls, errs int }

// toolCalls is one tool's cell, for drawing.
type toolCalls struct {
	tool string
	cell
}

// perHourCalls orders each hour's tools as the legend does.
func perHourCalls(perHour []map[string]*cell, order []toolStat) [][]toolCalls {
	out := make([][]toolCalls, len(perHour))
	for h, m := range perHour {
		for _, st := range order {
			if v, ok := m[st.Tool]; ok {
				out[h] = append(out[h], toolCalls{st.Tool, *v})
			}
		}
	}
	return out
}

func (c *chart) draw(hours [][]toolCalls, start time.Time, fill map[string]string) {
	if c.Max == 0 {
		return
	}
	plotH := chartH - chartTop - chartBottom
	slot := (chartW - chartLeft) / chartHours
	scale := func(n int) int { return n * plotH / c.Max }
	for h, hc := range hours {
		x := chartLeft + h*slot + 2
		y := chartTop + plotH
		b := bar{}
		total, errs := 0, 0
		for _, tc := range hc {
			hgt := scale(tc.calls)
			if hgt == 0 && tc.calls > 0 {
				hgt = 1
			}
			y -= hgt
			b.Segs = append(b.Segs, rect{X: x, Y: y, W: slot - 4, H: hgt, Fill: fill[tc.tool],
				Title: fmt.Sprintf("%s %s: %d calls, %d errors", start.Add(time.Duration(h)*time.Hour).Format("15:04"), tc.tool, tc.calls, tc.errs)})
			total += tc.calls
			errs += tc.errs
		}
		if errs > 0 {
			eh := max(scale(errs), 1)
			b.Err = &rect{X: x, Y: chartTop + plotH - eh, W: 4, H: eh, Fill: "#d62728",
				Title: fmt.Sprintf("%s: %d of %d calls failed (%s)", start.Add(time.Duration(h)*time.Hour).Format("15:04"), errs, total, share(errs, total))}
		}
		c.Bars = append(c.Bars, b)
		if h%3 == 0 {
			c.Labels = append(c.Labels, label{X: x, Y: chartH - 12, Text: start.Add(time.Duration(h) * time.Hour).Format("15h")})
		}
	}
	c.Labels = append(c.Labels, label{X: 2, Y: chartTop + 10, Text: fmt.Sprint(c.Max)}, label{X: 2, Y: chartTop + plotH, Text: "0"})
}

// percentile is the p-th percentile (nearest rank) of ds, which it sorts.
func percentile(ds []int64, p int) int64 {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := (p*len(ds) + 99) / 100
	return ds[max(i-1, 0)]
}

func share(part, whole int) string {
	if whole == 0 {
		return "0%"
	}
	s := fmt.Sprintf("%.1f", 100*float64(part)/float64(whole))
	return strings.TrimSuffix(s, ".0") + "%"
}
