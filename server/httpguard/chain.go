package httpguard

import (
	"context"
	"net/http"
	"time"
)

// Middleware is one check: it refuses a request or passes it to next.
type Middleware func(next http.Handler) http.Handler

// Chain wraps h in mws; the first listed runs first.
func Chain(h http.Handler, mws ...Middleware) http.Handler {
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i](h)
	}
	return h
}

type refuseHookKey struct{}

// RefuseHook hears a refusal: the request, its status and why.
type RefuseHook func(r *http.Request, status int, why string)

// OnRefuse makes hook hear every refusal of the checks after it.
func OnRefuse(hook RefuseHook) Middleware {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), refuseHookKey{}, hook)))
		})
	}
}

// Refuse answers r with status and msg (text/plain). A body the handlers
// have not read is left unread: the connection closes after the answer,
// so that neither a large nor a trickled body delays it or holds the
// connection.
func Refuse(w http.ResponseWriter, r *http.Request, status int, msg string) {
	if hook, _ := r.Context().Value(refuseHookKey{}).(RefuseHook); hook != nil {
		hook(r, status, msg)
	}
	if bodyUnread(r) {
		if r.ProtoMajor == 1 {
			// net/http would otherwise read what is left of the body
			// (up to 256 KiB) before it writes the answer.
			w.Header().Set("Connection", "close")
		}
		// And after the answer, closing the body must not wait for it.
		_ = http.NewResponseController(w).SetReadDeadline(time.Now())
	}
	http.Error(w, msg, status)
}

// bodyUnread tells a request whose body may still be on the wire.
func bodyUnread(r *http.Request) bool {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return false
	}
	_, read := r.Body.(readBody)
	return !read
}

// SetHeaders sets the response headers kv on every answer, refusals
// included.
func SetHeaders(kv ...[2]string) Middleware {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h := w.Header()
			for _, p := range kv {
				h.Set(p[0], p[1])
			}
			next.ServeHTTP(w, r)
		})
	}
}
