package audit

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/render"
)

// The audit rows' detail column holds JSON as the Python reference server
// writes it (json.dumps), so that its readers and ours see the same text.

// DetailJSON encodes a query_log detail object the way the reference's
// json.dumps(detail, ensure_ascii=False) does: ", " and ": " separators,
// non-ASCII raw, floats in Python's repr form. Go maps have no order, so
// keys are sorted. Types it does not know (structs, ...) are encoded by
// encoding/json.
func DetailJSON(detail map[string]any) string {
	return string(appendPyJSON(nil, detail))
}

func appendPyJSON(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case string:
		return render.AppendJSONString(b, x, render.KeepBytes)
	case bool:
		return strconv.AppendBool(b, x)
	case int:
		return strconv.AppendInt(b, int64(x), 10)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case int32:
		return strconv.AppendInt(b, int64(x), 10)
	case uint64:
		return strconv.AppendUint(b, x, 10)
	case uint:
		return strconv.AppendUint(b, uint64(x), 10)
	case float64:
		return appendPyFloat(b, x)
	case float32:
		return appendPyFloat(b, float64(x))
	case time.Duration:
		return strconv.AppendInt(b, x.Milliseconds(), 10)
	case error:
		return render.AppendJSONString(b, x.Error(), render.KeepBytes)
	case fmt.Stringer:
		return render.AppendJSONString(b, x.String(), render.KeepBytes)
	case []string:
		b = append(b, '[')
		for i, s := range x {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = render.AppendJSONString(b, s, render.KeepBytes)
		}
		return append(b, ']')
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = appendPyJSON(b, e)
		}
		return append(b, ']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = render.AppendJSONString(b, k, render.KeepBytes)
			b = append(b, ": "...)
			b = appendPyJSON(b, x[k])
		}
		return append(b, '}')
	}
	// Pointers to known types, and everything else.
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return append(b, "null"...)
		}
		return appendPyJSON(b, rv.Elem().Interface())
	}
	enc, err := json.Marshal(v)
	if err != nil {
		return render.AppendJSONString(b, fmt.Sprint(v), render.KeepBytes)
	}
	return append(b, enc...)
}

// appendPyFloat writes f as Python's repr does: shortest round-trip digits,
// always with a '.0' or an exponent; exponent form below 1e-4 and from 1e16.
// NaN and infinities, which JSON lacks, are written as Python writes them.
func appendPyFloat(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, 1):
		return append(b, "Infinity"...)
	case math.IsInf(f, -1):
		return append(b, "-Infinity"...)
	}
	if a := math.Abs(f); a != 0 && (a < 1e-4 || a >= 1e16) {
		return strconv.AppendFloat(b, f, 'e', -1, 64)
	}
	start := len(b)
	b = strconv.AppendFloat(b, f, 'f', -1, 64)
	for _, c := range b[start:] {
		if c == '.' {
			return b
		}
	}
	return append(b, ".0"...)
}
