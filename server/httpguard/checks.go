package httpguard

import (
	"net"
	"net/http"
	"net/url"
	"strings"
)

// Host refuses a request whose Host header is not one of allowed (DNS
// rebinding): an entry with a port must match host:port, one without a
// port matches the host name on any port; case and IPv6 brackets do not
// matter. msg says why, given the Host.
func Host(allowed []string, status int, msg func(host string) string) Middleware {
	names, hostPorts := map[string]bool{}, map[string]bool{}
	for _, a := range allowed {
		if h, p, err := net.SplitHostPort(a); err == nil && p != "" {
			hostPorts[strings.ToLower(net.JoinHostPort(h, p))] = true
			continue
		}
		names[strings.ToLower(strings.Trim(a, "[]"))] = true
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !names[HostName(r.Host)] && !hostPorts[normalHostPort(r.Host)] {
				Refuse(w, r, status, msg(r.Host))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// HostName is the host name of a Host header, lowercased, without port
// and brackets.
func HostName(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return strings.ToLower(strings.Trim(host, "[]"))
}

func normalHostPort(host string) string {
	h, p, err := net.SplitHostPort(host)
	if err != nil {
		return ""
	}
	return strings.ToLower(net.JoinHostPort(h, p))
}

// Origin refuses a request whose Origin header, when present, ok does not
// accept (403). Requests without Origin (every non-browser client) pass.
func Origin(ok func(origin string, r *http.Request) bool, msg func(origin string) string) Middleware {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if o := r.Header.Get("Origin"); o != "" && !ok(o, r) {
				Refuse(w, r, http.StatusForbidden, msg(o))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// AllowedOrigins accepts the origins of list (scheme://host[:port]; case
// and a trailing slash do not matter).
func AllowedOrigins(list []string) func(string, *http.Request) bool {
	set := map[string]bool{}
	for _, o := range list {
		set[strings.ToLower(strings.TrimSuffix(o, "/"))] = true
	}
	return func(origin string, _ *http.Request) bool {
		return set[strings.ToLower(strings.TrimSuffix(origin, "/"))]
	}
}

// SameOrigin accepts an http or https origin whose host:port is the
// request's Host.
func SameOrigin(origin string, r *http.Request) bool {
	o, err := url.Parse(origin)
	return err == nil && (o.Scheme == "http" || o.Scheme == "https") && o.Path == "" && strings.EqualFold(o.Host, r.Host)
}

// SameSite refuses a request a browser marks as sent from another site
// (Sec-Fetch-Site cross-site or same-site; 403).
func SameSite(msg string) Middleware {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if s := r.Header.Get("Sec-Fetch-Site"); s == "cross-site" || s == "same-site" {
				Refuse(w, r, http.StatusForbidden, msg)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// Methods refuses any method but methods (405 with Allow).
func Methods(msg string, methods ...string) Middleware {
	allow := strings.Join(methods, ", ")
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			for _, m := range methods {
				if r.Method == m {
					next.ServeHTTP(w, r)
					return
				}
			}
			w.Header().Set("Allow", allow)
			Refuse(w, r, http.StatusMethodNotAllowed, msg)
		})
	}
}

// credentialKeys are query parameter names that carry credentials.
var credentialKeys = map[string]bool{"token": true, "access_token": true, "auth": true, "authorization": true, "bearer": true, "api_key": true, "apikey": true, "key": true}

// NoCredentialsInURL refuses (400) a query string with a parameter named
// like a credential, or with a value isCredential recognises (a token of
// ours, or shaped like one): URLs end up in logs and histories.
func NoCredentialsInURL(isCredential func(value string) bool, msg string) Middleware {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.RawQuery != "" && credentialInQuery(r.URL.Query(), isCredential) {
				Refuse(w, r, http.StatusBadRequest, msg)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

func credentialInQuery(q url.Values, isCredential func(string) bool) bool {
	for k, vs := range q {
		if credentialKeys[strings.ToLower(k)] {
			return true
		}
		for _, v := range vs {
			if isCredential(v) {
				return true
			}
		}
	}
	return false
}
