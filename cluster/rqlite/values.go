package rqlite

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Statement is one SQL statement with its positional arguments.
type Statement struct {
	SQL  string
	Args []any
}

// encodeStatements writes stmts as rqlite's request body: a JSON array of
// strings, or of ["SQL", arg...] arrays for statements with arguments.
func encodeStatements(stmts []Statement) ([]byte, error) {
	if len(stmts) == 0 {
		return nil, errNoStatements
	}
	var b strings.Builder
	b.WriteByte('[')
	for i, s := range stmts {
		if i > 0 {
			b.WriteByte(',')
		}
		q, err := json.Marshal(s.SQL)
		if err != nil {
			return nil, err
		}
		if len(s.Args) == 0 {
			b.Write(q)
			continue
		}
		b.WriteByte('[')
		b.Write(q)
		for j, a := range s.Args {
			b.WriteByte(',')
			v, err := encodeArg(a)
			if err != nil {
				return nil, &ArgumentError{Statement: i, Arg: j, Reason: err.Error()}
			}
			b.WriteString(v)
		}
		b.WriteByte(']')
	}
	b.WriteByte(']')
	return []byte(b.String()), nil
}

// encodeArg writes one argument as rqlite v8 reads it back with the same
// SQLite type: a float keeps a fraction or exponent (rqlite reads "2" as
// an integer), a BLOB goes as an array of bytes.
func encodeArg(a any) (string, error) {
	switch v := a.(type) {
	case nil:
		return "null", nil
	case bool:
		return strconv.FormatBool(v), nil
	case int:
		return strconv.FormatInt(int64(v), 10), nil
	case int8:
		return strconv.FormatInt(int64(v), 10), nil
	case int16:
		return strconv.FormatInt(int64(v), 10), nil
	case int32:
		return strconv.FormatInt(int64(v), 10), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case uint8:
		return strconv.FormatUint(uint64(v), 10), nil
	case uint16:
		return strconv.FormatUint(uint64(v), 10), nil
	case uint32:
		return strconv.FormatUint(uint64(v), 10), nil
	case uint:
		if uint64(v) > math.MaxInt64 {
			return "", fmt.Errorf("%d is larger than SQLite's largest integer", v)
		}
		return strconv.FormatUint(uint64(v), 10), nil
	case uint64:
		if v > math.MaxInt64 {
			return "", fmt.Errorf("%d is larger than SQLite's largest integer", v)
		}
		return strconv.FormatUint(v, 10), nil
	case float32:
		return encodeFloat(float64(v))
	case float64:
		return encodeFloat(v)
	case string:
		if looksLikeHexBlob(v) {
			return "", fmt.Errorf("the text %.40q would be stored as a BLOB: rqlite v8 reads any text argument of the form x'hex' as one; pass the bytes ([]byte) and write CAST(? AS TEXT) in the SQL", v)
		}
		q, err := json.Marshal(v)
		return string(q), err
	case []byte:
		if v == nil {
			return "null", nil
		}
		var b strings.Builder
		b.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(int(x)))
		}
		b.WriteByte(']')
		return b.String(), nil
	}
	return "", fmt.Errorf("a %T cannot be sent: pass an integer, a float, a string, []byte, a bool or nil", a)
}

func encodeFloat(f float64) (string, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "", fmt.Errorf("%v cannot be sent: JSON has no NaN or infinity", f)
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s, nil
}

// looksLikeHexBlob says whether rqlite v8's request parser would turn the
// text argument s into a BLOB (its db.ParseHex: x'...' of valid hex, after
// trimming spaces).
func looksLikeHexBlob(s string) bool {
	t := strings.TrimSpace(s)
	if len(t) < 3 || (t[0] != 'x' && t[0] != 'X') || t[1] != '\'' || t[len(t)-1] != '\'' {
		return false
	}
	h := t[2 : len(t)-1]
	if len(h)%2 != 0 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// decodeValue turns one JSON value of a result row into a Go value:
// nil, int64, float64, string or []byte. typ is the column's type as
// rqlite reports it (the declared type, else the first row's).
func decodeValue(v any, typ string) (any, error) {
	switch x := v.(type) {
	case nil, string:
		return x, nil
	case bool:
		// rqlite's driver turns integers in a BOOLEAN column into bools.
		if x {
			return int64(1), nil
		}
		return int64(0), nil
	case json.Number:
		return decodeNumber(x, typ)
	case []any:
		// A BLOB (the request asks for blob_array).
		b := make([]byte, len(x))
		for i, e := range x {
			n, ok := e.(json.Number)
			if !ok {
				return nil, fmt.Errorf("a BLOB byte is %T, not a number", e)
			}
			k, err := strconv.ParseUint(n.String(), 10, 8)
			if err != nil {
				return nil, fmt.Errorf("a BLOB byte is %s", n)
			}
			b[i] = byte(k)
		}
		return b, nil
	}
	return nil, fmt.Errorf("unexpected JSON value %T in a row", v)
}

// decodeNumber keeps integers exact: a number written without fraction or
// exponent is an int64, unless the column has REAL affinity (rqlite writes
// the REAL 2.0 as 2).
func decodeNumber(n json.Number, typ string) (any, error) {
	s := n.String()
	if !strings.ContainsAny(s, ".eE") && !realAffinity(typ) {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i, nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, fmt.Errorf("bad number %s in a row", s)
	}
	return f, nil
}

// realAffinity applies SQLite's affinity rules (datatype3 section 3.1) to
// a declared type: REAL when it has no "INT", "CHAR", "CLOB", "TEXT" or
// "BLOB" but has "REAL", "FLOA" or "DOUB".
func realAffinity(typ string) bool {
	t := strings.ToUpper(typ)
	for _, s := range []string{"INT", "CHAR", "CLOB", "TEXT", "BLOB"} {
		if strings.Contains(t, s) {
			return false
		}
	}
	return strings.Contains(t, "REAL") || strings.Contains(t, "FLOA") || strings.Contains(t, "DOUB")
}
