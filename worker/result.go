package worker

import (
	"encoding/json"
	"unsafe"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/render"
)

// result is a CSV or JSON renderer behind one face.
type result struct {
	csv  *render.CSV
	json *render.JSON
}

func newResult(format ipc.Format, caps render.Caps, columns []string) *result {
	if format == ipc.FormatJSON {
		return &result{json: render.NewJSON(caps, columns)}
	}
	return &result{csv: render.NewCSV(caps, columns)}
}

func (r *result) Add(row []render.Value) bool {
	if r.json != nil {
		return r.json.Add(row)
	}
	return r.csv.Add(row)
}

// finish ends the result. The text shares the renderer's buffer rather than
// copying it (an export is megabytes): nothing writes to that buffer after
// Finish.
func (r *result) finish(more bool) *ipc.Response {
	if r.json != nil {
		doc := r.json.Finish(more)
		return &ipc.Response{Text: unsafe.String(unsafe.SliceData(doc), len(doc)), JSON: json.RawMessage(doc), Rows: int64(r.json.Rows())}
	}
	text := r.csv.Finish(more)
	return &ipc.Response{Text: unsafe.String(unsafe.SliceData(text), len(text)), Rows: int64(r.csv.Rows())}
}
