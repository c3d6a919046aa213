package render

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func ival(n int64) Value      { return Value{Kind: Integer, Int: n} }
func rval(f float64) Value    { return Value{Kind: Real, Real: f} }
func tval(s string) Value     { return Value{Kind: Text, Text: s} }
func bval(n int) Value        { return Value{Kind: Blob, BlobLen: n} }
func row(vs ...Value) []Value { return vs }

var null = Value{}

func TestFormatReal(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{2, "2.0"},
		{0.1, "0.1"},
		{1e16, "1e+16"},
		{1e-7, "1e-07"},
		{1.5e-7, "1.5e-07"},
		{123456789.123, "123456789.123"},
		{-0.5, "-0.5"},
		{0, "0.0"},
		{math.Copysign(0, -1), "-0.0"},
		{100, "100.0"},
		{1e15, "1000000000000000.0"},
		{9007199254740993, "9007199254740992.0"}, // large int as REAL: nearest float64
		{123456789012345678, "1.2345678901234568e+17"},
		{-1e16, "-1e+16"},
		{1e22, "1e+22"},
		{3.0e300, "3e+300"},
		{1e-4, "0.0001"},
		{1.25e-4, "0.000125"},
		{1e-5, "1e-05"},
		{-1.5e-5, "-1.5e-05"},
		{5e-324, "5e-324"},
		{math.MaxFloat64, "1.7976931348623157e+308"},
		{1234567890123456.7, "1234567890123456.8"},
		{0.30000000000000004, "0.30000000000000004"},
		{math.Inf(1), "Inf"},
		{math.Inf(-1), "-Inf"},
		{math.NaN(), "NaN"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := FormatReal(tt.in); got != tt.want {
				t.Errorf("FormatReal(%v) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// Every finite real reads back exactly and never reads as an integer.
func TestFormatRealRoundTrips(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		f := math.Float64frombits(r.Uint64())
		if math.IsInf(f, 0) || math.IsNaN(f) {
			continue
		}
		s := FormatReal(f)
		back, err := strconv.ParseFloat(s, 64)
		if err != nil || math.Float64bits(back) != math.Float64bits(f) {
			t.Fatalf("FormatReal(%v) = %q reads back as %v (%v)", f, s, back, err)
		}
		if !strings.ContainsAny(s, ".e") {
			t.Fatalf("FormatReal(%v) = %q reads as an integer", f, s)
		}
	}
}

func TestCutCell(t *testing.T) {
	tests := []struct {
		name string
		in   string
		max  int
		want string
		cut  bool
	}{
		{"short", "abc", 5, "abc", false},
		{"exact", "abcde", 5, "abcde", false},
		{"ascii", "abcdefgh", 5, "abcde...[+3 chars]", true},
		{"runes not bytes", "ééééé", 5, "ééééé", false},
		{"runes cut", "日本語のテキスト", 3, "日本語...[+5 chars]", true},
		{"emoji", "😀😀😀", 1, "😀...[+2 chars]", true},
		{"invalid utf8 counts per byte", "ab\xff\xfecd", 3, "ab\xff...[+3 chars]", true},
		{"no cap", strings.Repeat("x", 5000), 0, strings.Repeat("x", 5000), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, cut := CutCell(tt.in, tt.max)
			if got != tt.want || cut != tt.cut {
				t.Errorf("CutCell(%q, %d) = %q, %v; want %q, %v", tt.in, tt.max, got, cut, tt.want, tt.cut)
			}
		})
	}
}

func csvOf(caps Caps, cols []string, rows [][]Value, more bool) string {
	w := NewCSV(caps, cols)
	for _, r := range rows {
		if !w.Add(r) {
			break
		}
	}
	return string(w.Finish(more))
}

var wide = Caps{Limit: 100, MaxRows: 1000, MaxBytes: 32768, MaxCellChars: 2000}

func TestCSVCells(t *testing.T) {
	tests := []struct {
		name string
		cols []string
		row  []Value
		want string // the data line, without "\n"
	}{
		{"null vs empty", []string{"a", "b", "c"}, row(null, tval(""), tval("x")), `,"",x`},
		{"quotes", []string{"a"}, row(tval(`he said "hi"`)), `"he said ""hi"""`},
		{"comma", []string{"a", "b"}, row(tval("a,b"), ival(1)), `"a,b",1`},
		{"lf", []string{"a"}, row(tval("two\nlines")), "\"two\nlines\""},
		{"crlf", []string{"a"}, row(tval("two\r\nlines")), "\"two\r\nlines\""},
		{"lone cr", []string{"a"}, row(tval("a\rb")), "\"a\rb\""},
		{"blob", []string{"a", "b"}, row(bval(3), bval(0)), "<blob 3 bytes>,<blob 0 bytes>"},
		{"unicode", []string{"a"}, row(tval("Zürich – 東京 😀")), "Zürich – 東京 😀"},
		{"spaces kept", []string{"a"}, row(tval("  x  ")), "  x  "},
		{"reals", []string{"a", "b", "c", "d"}, row(rval(2), rval(0.1), rval(1e16), rval(-0.5)), "2.0,0.1,1e+16,-0.5"},
		{"int extremes", []string{"a", "b", "c"}, row(ival(math.MaxInt64), ival(math.MinInt64), ival(0)), "9223372036854775807,-9223372036854775808,0"},
		{"single null", []string{"a"}, row(null), ""},
		{"single empty", []string{"a"}, row(tval("")), `""`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := csvOf(wide, tt.cols, [][]Value{tt.row}, false)
			want := string(AppendRecord(nil, tt.cols, true)) + tt.want + "\n# 1 rows"
			if got != want {
				t.Errorf("got  %q\nwant %q", got, want)
			}
		})
	}
}

func TestCSVHeader(t *testing.T) {
	got := csvOf(wide, []string{"id", "a,b", `q"`, ""}, nil, false)
	want := "id,\"a,b\",\"q\"\"\",\"\"\n# 0 rows"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := csvOf(wide, nil, nil, false); got != "# 0 rows" {
		t.Errorf("no columns: got %q", got)
	}
}

func TestCSVTrailer(t *testing.T) {
	ints := func(n int) [][]Value {
		rs := make([][]Value, n)
		for i := range rs {
			rs[i] = row(ival(int64(i + 1)))
		}
		return rs
	}
	long := [][]Value{row(tval(strings.Repeat("y", 200))), row(tval("short")), row(tval(strings.Repeat("é", 150)))}
	tests := []struct {
		name string
		caps Caps
		rows [][]Value
		more bool
		want string
	}{
		{"zero rows", wide, nil, false, "a\n# 0 rows"},
		{"one row", wide, ints(1), false, "a\n1\n# 1 rows"},
		{"fits", Caps{Limit: 2, MaxRows: 1000, MaxBytes: 1000, MaxCellChars: 100}, ints(2), false, "a\n1\n2\n# 2 rows"},
		{"limit by probe row", Caps{Limit: 2, MaxRows: 1000, MaxBytes: 1000, MaxCellChars: 100}, ints(3), false,
			"a\n1\n2\n# 2 rows, truncated by limit=2 (more rows exist; raise limit up to 1000, use offset=2, or narrow the query)"},
		{"limit by caller", Caps{Limit: 2, MaxRows: 1000, MaxBytes: 1000, MaxCellChars: 100}, ints(2), true,
			"a\n1\n2\n# 2 rows, truncated by limit=2 (more rows exist; raise limit up to 1000, use offset=2, or narrow the query)"},
		{"limit with offset", Caps{Limit: 3, Offset: 40, MaxRows: 500, MaxBytes: 1000, MaxCellChars: 100}, ints(4), false,
			"a\n1\n2\n3\n# 3 rows, truncated by limit=3 (more rows exist; raise limit up to 500, use offset=43, or narrow the query)"},
		{"bytes", Caps{Limit: 100, MaxRows: 1000, MaxBytes: 6, MaxCellChars: 100}, ints(5), true,
			"a\n1\n2\n# 2 rows, truncated at 6 bytes (select fewer columns or narrow the query)"},
		{"cells cut", Caps{Limit: 100, MaxRows: 1000, MaxBytes: 1000, MaxCellChars: 100}, long, false,
			"a\n" + strings.Repeat("y", 100) + "...[+100 chars]\nshort\n" + strings.Repeat("é", 100) + "...[+50 chars]\n# 3 rows; 2 cells cut to 100 chars"},
		{"limit and cells cut", Caps{Limit: 1, MaxRows: 1000, MaxBytes: 1000, MaxCellChars: 100}, long, false,
			"a\n" + strings.Repeat("y", 100) + "...[+100 chars]\n# 1 rows, truncated by limit=1 (more rows exist; raise limit up to 1000, use offset=1, or narrow the query); 1 cells cut to 100 chars"},
		{"refused row's cut not counted", Caps{Limit: 100, MaxRows: 1000, MaxBytes: 130, MaxCellChars: 100}, long, false,
			"a\n" + strings.Repeat("y", 100) + "...[+100 chars]\nshort\n# 2 rows, truncated at 130 bytes (select fewer columns or narrow the query); 1 cells cut to 100 chars"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := csvOf(tt.caps, []string{"a"}, tt.rows, tt.more); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

// The reference server's own byte-cap cases (tests/test_csvfmt.py).
func TestCSVByteCapKeepsOneRow(t *testing.T) {
	rows := make([][]Value, 10)
	for i := range rows {
		rows[i] = row(tval(strings.Repeat("x", 50)))
	}
	tests := []struct {
		name     string
		maxBytes int
		rows     int
	}{
		{"two fit", 120, 2},
		{"cap below header", 5, 1},
		{"cap below first row", 20, 1},
		{"exactly two", 2 + 51*2, 2},
		{"one byte short of three", 2 + 51*3 - 1, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := NewCSV(Caps{MaxBytes: tt.maxBytes, MaxCellChars: 100}, []string{"a"})
			added := 0
			for _, r := range rows {
				if !w.Add(r) {
					break
				}
				added++
			}
			if added != tt.rows || w.Rows() != tt.rows || !w.Truncated() {
				t.Fatalf("added %d, Rows %d, Truncated %v; want %d rows, truncated", added, w.Rows(), w.Truncated(), tt.rows)
			}
			if n := len(w.Body()); tt.rows > 1 && n > tt.maxBytes {
				t.Errorf("body is %d bytes, over the cap %d", n, tt.maxBytes)
			}
			if w.Add(rows[0]) {
				t.Error("Add after the cap stopped the output returned true")
			}
		})
	}
	t.Run("single oversized row is not truncation", func(t *testing.T) {
		got := csvOf(Caps{MaxBytes: 5}, []string{"a"}, rows[:1], false)
		if want := "a\n" + strings.Repeat("x", 50) + "\n# 1 rows"; got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	})
	t.Run("utf-8 bytes counted", func(t *testing.T) {
		w := NewCSV(Caps{MaxBytes: 2 + 2*7}, []string{"a"}) // "a\n" + 2 x "ééé\n"
		for range 3 {
			w.Add(row(tval("ééé")))
		}
		if w.Rows() != 2 || !w.Truncated() {
			t.Errorf("Rows %d, Truncated %v; want 2, true", w.Rows(), w.Truncated())
		}
	})
}

func TestCSVAddStrings(t *testing.T) {
	w := NewCSV(Caps{MaxCellChars: 5}, []string{"key", "column", "snippet"})
	w.AddStrings([]string{"1", "body", `...say "hello", world...`})
	w.AddStrings([]string{"2", "", "abc"})
	w.AddStrings([]string{"3", "x", "a,\"bcdefg"})
	got := string(w.Finish(false))
	want := "key,column,snippet\n1,body,...sa...[+19 chars]\n2,\"\",abc\n3,x,\"a,\"\"bc...[+4 chars]\"\n# 3 rows; 2 cells cut to 5 chars"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// parseCSV reads back a rendered text: the trailer is the last line.
func parseCSV(t testing.TB, text string) ([][]string, string) {
	t.Helper()
	i := strings.LastIndexByte(text, '\n')
	body, trailer := text[:i+1], text[i+1:]
	rd := csv.NewReader(strings.NewReader(body))
	rd.FieldsPerRecord = -1
	recs, err := rd.ReadAll()
	if err != nil {
		t.Fatalf("encoding/csv rejects %q: %v", body, err)
	}
	return recs, trailer
}

// wantCell is what encoding/csv gives back for a value: NULL and "" both
// read as "" there, and CR LF inside a quoted field reads as LF.
func wantCell(v Value, max int) string {
	switch v.Kind {
	case Integer:
		return strconv.FormatInt(v.Int, 10)
	case Real:
		return FormatReal(v.Real)
	case Text:
		s, _ := CutCell(v.Text, max)
		return strings.ReplaceAll(s, "\r\n", "\n")
	case Blob:
		return "<blob " + strconv.Itoa(v.BlobLen) + " bytes>"
	}
	return ""
}

func TestCSVRoundTrip(t *testing.T) {
	cols := []string{"id", "name, full", `say "x"`, "n", "r", "b"}
	rows := [][]Value{
		row(ival(1), tval("plain"), tval(`"quoted"`), null, rval(2), bval(10)),
		row(ival(-2), tval("multi\nline\r\nwith, commas"), tval(""), ival(math.MinInt64), rval(1e-7), null),
		row(ival(3), tval("ünïcödé 😀"), tval(`,",`), tval("\r"), rval(math.Inf(-1)), tval(" ")),
		row(ival(4), tval(strings.Repeat("ab\"", 40)), null, null, null, null),
	}
	caps := Caps{MaxCellChars: 50}
	recs, trailer := parseCSV(t, csvOf(caps, cols, rows, false))
	if !reflect.DeepEqual(recs[0], cols) {
		t.Errorf("header %q, want %q", recs[0], cols)
	}
	if len(recs) != len(rows)+1 {
		t.Fatalf("%d records, want %d", len(recs), len(rows)+1)
	}
	for i, r := range rows {
		for j, v := range r {
			if got, want := recs[i+1][j], wantCell(v, caps.MaxCellChars); got != want {
				t.Errorf("row %d col %d: %q, want %q", i, j, got, want)
			}
		}
	}
	if trailer != "# 4 rows; 1 cells cut to 50 chars" {
		t.Errorf("trailer %q", trailer)
	}
}

func FuzzCSVRoundTrip(f *testing.F) {
	f.Add(int64(1), "plain", "", false, 2.5)
	f.Add(int64(-1), "a,b\"c\r\nd", "\n", true, 1e16)
	f.Fuzz(func(t *testing.T, id int64, a, b string, bNull bool, r float64) {
		bv := tval(b)
		if bNull {
			bv = null
		}
		vals := row(ival(id), tval(a), bv, rval(r))
		const max = 20
		text := csvOf(Caps{MaxCellChars: max}, []string{"id", "a", "b", "r"}, [][]Value{vals}, false)
		recs, trailer := parseCSV(t, text)
		if len(recs) != 2 {
			t.Fatalf("%d records from %q", len(recs), text)
		}
		for j, v := range vals {
			if got, want := recs[1][j], wantCell(v, max); got != want {
				t.Errorf("col %d: %q, want %q (text %q)", j, got, want, text)
			}
		}
		if !strings.HasPrefix(trailer, "# 1 rows") {
			t.Errorf("trailer %q", trailer)
		}
	})
}

func jsonOf(caps Caps, cols []string, rows [][]Value, more bool) string {
	w := NewJSON(caps, cols)
	for _, r := range rows {
		if !w.Add(r) {
			break
		}
	}
	return string(w.Finish(more))
}

func TestJSON(t *testing.T) {
	tests := []struct {
		name string
		caps Caps
		cols []string
		rows [][]Value
		more bool
		want string
	}{
		{"no columns", Caps{Limit: 100}, nil, nil, false,
			`{"columns":[],"rows":[],"returnedRows":0,"limit":100,"offset":0,"hasMore":false}`},
		{"types", Caps{Limit: 100, Offset: 5}, []string{"i", "r", "t", "n", "b"},
			[][]Value{row(ival(math.MinInt64), rval(2), tval("x"), null, bval(4)), row(ival(7), rval(1e16), tval(""), null, bval(0))}, false,
			`{"columns":["i","r","t","n","b"],"rows":[[-9223372036854775808,2.0,"x",null,"<blob 4 bytes>"],[7,1e+16,"",null,"<blob 0 bytes>"]],"returnedRows":2,"limit":100,"offset":5,"hasMore":false}`},
		{"escaping", Caps{}, []string{`q"\`},
			[][]Value{row(tval("a\"b\\c\n\r\t\b\f\x01\x1f\x7f<>&\u2028é😀")), row(tval("bad\xffutf8"))}, false,
			`{"columns":["q\"\\"],"rows":[["a\"b\\c\n\r\t\b\f\u0001\u001f` + "\x7f<>&\u2028é😀" + `"],["bad\ufffdutf8"]],"returnedRows":2,"limit":0,"offset":0,"hasMore":false}`},
		{"infinities", Caps{}, []string{"a", "b"}, [][]Value{row(rval(math.Inf(1)), rval(math.Inf(-1)))}, false,
			`{"columns":["a","b"],"rows":[["Inf","-Inf"]],"returnedRows":1,"limit":0,"offset":0,"hasMore":false}`},
		{"limit", Caps{Limit: 1, Offset: 10}, []string{"a"}, [][]Value{row(ival(1)), row(ival(2))}, false,
			`{"columns":["a"],"rows":[[1]],"returnedRows":1,"limit":1,"offset":10,"hasMore":true}`},
		{"caller more", Caps{Limit: 1}, []string{"a"}, [][]Value{row(ival(1))}, true,
			`{"columns":["a"],"rows":[[1]],"returnedRows":1,"limit":1,"offset":0,"hasMore":true}`},
		{"cell cap", Caps{MaxCellChars: 2}, []string{"a"}, [][]Value{row(tval("é\"xyz"))}, false,
			`{"columns":["a"],"rows":[["é\"...[+3 chars]"]],"returnedRows":1,"limit":0,"offset":0,"hasMore":false}`},
		{"byte cap", Caps{Limit: 10, MaxBytes: len(`{"columns":["a"],"rows":[[1],[2]`)}, []string{"a"},
			[][]Value{row(ival(1)), row(ival(2)), row(ival(3))}, false,
			`{"columns":["a"],"rows":[[1],[2]],"returnedRows":2,"limit":10,"offset":0,"hasMore":true}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := jsonOf(tt.caps, tt.cols, tt.rows, tt.more)
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			var doc struct {
				Columns      []string
				Rows         [][]any
				ReturnedRows int
				Limit        int
				Offset       int
				HasMore      bool
			}
			dec := json.NewDecoder(strings.NewReader(got))
			dec.UseNumber()
			dec.DisallowUnknownFields()
			if err := dec.Decode(&doc); err != nil {
				t.Fatalf("not valid JSON: %v", err)
			}
			if doc.ReturnedRows != len(doc.Rows) {
				t.Errorf("returnedRows %d, rows %d", doc.ReturnedRows, len(doc.Rows))
			}
		})
	}
}

// JSON text cells read back as the text (cut by the cell cap) for any valid
// UTF-8 input.
func TestJSONParsesBack(t *testing.T) {
	texts := []string{"", "plain", "\x00\x1f\"\\/", "line\nbreak", "\u2028\u2029", "日本語", strings.Repeat("ab", 3000)}
	w := NewJSON(Caps{MaxCellChars: 2000}, []string{"t"})
	for _, s := range texts {
		w.Add(row(tval(s)))
	}
	var doc struct{ Rows [][]string }
	if err := json.Unmarshal(w.Finish(false), &doc); err != nil {
		t.Fatal(err)
	}
	for i, s := range texts {
		want, _ := CutCell(s, 2000)
		if doc.Rows[i][0] != want {
			t.Errorf("row %d: %q, want %q", i, doc.Rows[i][0], want)
		}
	}
	if w.CellsCut() != 1 || w.Rows() != len(texts) {
		t.Errorf("CellsCut %d, Rows %d", w.CellsCut(), w.Rows())
	}
}

// benchRows is 100k x 5 of mixed integers, reals, text (some needing
// quotes) and NULLs, like an export of a typical table.
func benchRows() [][]Value {
	words := []string{"alpha", "beta gamma", "delta, epsilon", `say "hi"`, "Zürich", "a somewhat longer description of an order line"}
	rows := make([][]Value, 100000)
	for i := range rows {
		rows[i] = row(
			ival(int64(i+1)),
			rval(float64(i)*1.25+0.1),
			tval(words[i%len(words)]),
			ival(int64(i*7919)%100000),
			[]Value{tval("2025-01-02T03:04:05Z"), null}[i%2],
		)
	}
	return rows
}

var benchCols = []string{"id", "price", "name", "qty", "ts"}

func BenchmarkCSV100kx5(b *testing.B) {
	rows := benchRows()
	b.ReportAllocs()
	var n int
	for b.Loop() {
		w := NewCSV(Caps{MaxCellChars: 2000}, benchCols)
		for _, r := range rows {
			w.Add(r)
		}
		n = len(w.Finish(false))
	}
	b.SetBytes(int64(n))
}

func BenchmarkJSON(b *testing.B) {
	rows := benchRows()
	b.ReportAllocs()
	var n int
	for b.Loop() {
		w := NewJSON(Caps{MaxCellChars: 2000}, benchCols)
		for _, r := range rows {
			w.Add(r)
		}
		n = len(w.Finish(false))
	}
	b.SetBytes(int64(n))
}

// A capped read, the common case: 100 rows into a 32 KiB cap.
func BenchmarkCSVPage(b *testing.B) {
	rows := benchRows()[:101]
	b.ReportAllocs()
	for b.Loop() {
		w := NewCSV(Caps{Limit: 100, MaxRows: 1000, MaxBytes: 32768, MaxCellChars: 2000}, benchCols)
		for _, r := range rows {
			if !w.Add(r) {
				break
			}
		}
		_ = w.Finish(false)
	}
}

// The buffer grows in few, large steps: an export reserves what its first
// rows suggest the page will take, a page without a limit doubles, and a
// byte-capped page never reserves far past its cap. The text is the same
// whatever the steps.
func TestBufferGrowth(t *testing.T) {
	rows := benchRows()
	tests := []struct {
		name      string
		caps      Caps
		maxGrowth int // reallocations after the first buffer
		maxCap    int
	}{
		{"export", Caps{Limit: 100000, MaxRows: 100000, MaxBytes: 1 << 30, MaxCellChars: 2000}, 2, 8 << 20},
		{"no limit", Caps{MaxCellChars: 2000}, 14, 16 << 20},
		{"capped page", Caps{Limit: 1000, MaxRows: 1000, MaxBytes: 32768}, 1, 32768 + rowRoom},
		{"deep page", Caps{Limit: 5000, MaxRows: 5000, MaxBytes: 1 << 20}, 2, 1<<20 + rowRoom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := NewCSV(tt.caps, benchCols)
			want := NewCSV(tt.caps, benchCols)
			want.buf = append(make([]byte, 0, 32<<20), want.buf...) // never grows
			growths, last := 0, cap(w.buf)
			for _, r := range rows {
				added := w.Add(r)
				if c := cap(w.buf); c != last {
					growths, last = growths+1, c
				}
				if want.Add(r) != added {
					t.Fatalf("row %d: Add disagrees with a buffer that never grows", w.Rows())
				}
				if !added {
					break
				}
			}
			if growths > tt.maxGrowth || cap(w.buf) > tt.maxCap {
				t.Errorf("%d reallocations, cap %d; want at most %d and %d", growths, cap(w.buf), tt.maxGrowth, tt.maxCap)
			}
			if got, exp := w.Finish(false), want.Finish(false); !bytes.Equal(got, exp) {
				t.Error("text differs from the one rendered into a buffer that never grows")
			}
		})
	}
}
