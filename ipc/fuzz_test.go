package ipc

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
)

// FuzzReadRequest feeds the worker's request decoder any bytes: it must
// never panic, and a request it accepts must survive WriteFrame and a second
// ReadRequest unchanged (the worker re-sends its own request to itself when
// a standalone worker confines itself by re-executing). Seeds live in
// testdata/fuzz/FuzzReadRequest; run longer with scripts/fuzz.sh.
func FuzzReadRequest(f *testing.F) {
	f.Add([]byte(`{"v":6,"op":"query","db":"/d/m.db","mode":"read","sql":"SELECT 1","caps":{"max_rows":10,"max_result_bytes":100,"max_cell_chars":10,"max_update_rows":1},"limits":{"timeout_ms":1000,"memory_mb":64,"max_growth_mb":1,"sandbox":true}}`))
	f.Add([]byte(`{"v":6,"op":"search_text","db":"m.db","search":{"pattern":"a+","table":"t","columns":[],"context_chars":5,"limit":3,"candidate_cap":9},"caps":{},"limits":{}}`))
	f.Add([]byte(`{"v":4,"op":"query","db":"x"}`)) // a front of the previous version
	f.Add([]byte(`{"v":6,"op":"query","db":"x"} {"v":6}`))
	f.Add([]byte("\xff\xfe{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := ReadRequest(bytes.NewReader(data))
		if err != nil {
			if req != nil {
				t.Fatalf("error %v with a request", err)
			}
			if errcode.Of(err) != errcode.InvalidArgument {
				t.Fatalf("decoder error without INVALID_ARGUMENT: %v", err)
			}
			return
		}
		var frame bytes.Buffer
		if err := WriteFrame(&frame, req); err != nil {
			t.Fatalf("re-encode %+v: %v", req, err)
		}
		again, err := ReadRequest(bytes.NewReader(frame.Bytes()))
		if err != nil {
			t.Fatalf("re-encoded request refused: %v\n%s", err, frame.Bytes())
		}
		if want := normalize(*req); !reflect.DeepEqual(*again, want) {
			t.Fatalf("round trip changed the request:\n got %+v\nwant %+v", *again, want)
		}
	})
}

// normalize is the one change a round trip may make: omitempty drops an
// empty column list, which then decodes as nil.
func normalize(r Request) Request {
	if r.Search != nil && len(r.Search.Columns) == 0 {
		s := *r.Search
		s.Columns = nil
		r.Search = &s
	}
	return r
}
