package httpguard

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"time"
)

// readBody is a body Body has read whole.
type readBody struct {
	*bytes.Reader
	b []byte
}

func (readBody) Close() error { return nil }

// BodyBytes is the body Body read whole, for the checks after it.
func BodyBytes(r *http.Request) ([]byte, bool) {
	rb, ok := r.Body.(readBody)
	return rb.b, ok
}

// BodyLimits bound a request body.
type BodyLimits struct {
	Max     int64         // bytes; more is 413
	Timeout time.Duration // the whole body must arrive within it; else 408
	// TooLarge and TooSlow are the texts of the refusals.
	TooLarge, TooSlow string
	// Read, when set, is called with each body read whole, before the
	// handlers below see it (the server nudges a standby worker).
	Read func(r *http.Request, body []byte)
}

// Body reads a POST's body whole, at most l.Max bytes within l.Timeout,
// and hands the handlers below it in memory; a body too large or too slow
// is refused and the connection closed without reading more. While the
// body is read its connection is pending (see Listener): a client that
// trickles a body holds no slot an authenticated client needs.
func Body(l BodyLimits) Middleware {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost || r.Body == nil || r.Body == http.NoBody {
				next.ServeHTTP(w, r)
				return
			}
			if r.ContentLength > l.Max {
				Refuse(w, r, http.StatusRequestEntityTooLarge, l.TooLarge)
				return
			}
			body, status := readWithin(w, r, l)
			if status != 0 {
				msg := l.TooSlow
				if status == http.StatusRequestEntityTooLarge {
					msg = l.TooLarge
				}
				Refuse(w, r, status, msg)
				return
			}
			r.Body = readBody{bytes.NewReader(body), body}
			r.ContentLength = int64(len(body))
			if l.Read != nil {
				l.Read(r, body)
			}
			next.ServeHTTP(w, r)
		})
	}
}

func readWithin(w http.ResponseWriter, r *http.Request, l BodyLimits) ([]byte, int) {
	trusted := Untrust(r.Context())
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(l.Timeout))
	body, err := io.ReadAll(io.LimitReader(r.Body, l.Max+1))
	if int64(len(body)) > l.Max {
		return nil, http.StatusRequestEntityTooLarge
	}
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, http.StatusRequestEntityTooLarge
		}
		return nil, http.StatusRequestTimeout
	}
	_ = rc.SetReadDeadline(time.Time{})
	if trusted {
		Trust(r.Context())
	}
	return body, 0
}
