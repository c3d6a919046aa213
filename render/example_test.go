package render_test

import (
	"fmt"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/render"
)

// NULL is an empty field and the empty string is "", REALs always read as
// REAL, and the trailer says when more rows exist and where to go on.
func ExampleNewCSV() {
	w := render.NewCSV(render.Caps{Limit: 2, MaxRows: 1000, MaxBytes: 32768, MaxCellChars: 2000}, []string{"id", "name", "score"})
	w.Add([]render.Value{{Kind: render.Integer, Int: 1}, {Kind: render.Text, Text: "a,b"}, {Kind: render.Real, Real: 2}})
	w.Add([]render.Value{{Kind: render.Integer, Int: 2}, {Kind: render.Text, Text: ""}, {Kind: render.Null}})
	fmt.Println(string(w.Finish(true)))
	// Output:
	// id,name,score
	// 1,"a,b",2.0
	// 2,"",
	// # 2 rows, truncated by limit=2 (more rows exist; raise limit up to 1000, use offset=2, or narrow the query)
}
