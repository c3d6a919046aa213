package httpguard

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// ok is the handler behind the checks: it says who reached it.
var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	_, _ = io.WriteString(w, "passed "+IdentityFrom(r.Context()).Agent)
})

type check struct {
	name   string
	req    func() *http.Request
	status int
	want   string
}

func req(method, url string, header ...string) func() *http.Request {
	return func() *http.Request {
		r := httptest.NewRequest(method, url, nil)
		for i := 0; i+1 < len(header); i += 2 {
			r.Header.Set(header[i], header[i+1])
		}
		return r
	}
}

func run(t *testing.T, mw Middleware, checks []check) {
	t.Helper()
	h := Chain(ok, mw)
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, c.req())
			if w.Code != c.status || !strings.Contains(w.Body.String(), c.want) {
				t.Fatalf("%d %q, want %d with %q", w.Code, w.Body.String(), c.status, c.want)
			}
		})
	}
}

func TestHost(t *testing.T) {
	mw := Host([]string{"127.0.0.1", "Mem.Example.com", "::1", "localhost:8080"}, 403, func(h string) string { return "bad host " + h })
	run(t, mw, []check{
		{"name, any port", req("GET", "http://127.0.0.1:9/"), 200, "passed"},
		{"case", req("GET", "http://mem.example.COM/"), 200, "passed"},
		{"ipv6", req("GET", "http://[::1]:80/"), 200, "passed"},
		{"host:port exact", req("GET", "http://LOCALHOST:8080/"), 200, "passed"},
		{"host:port, other port", req("GET", "http://localhost:8081/"), 403, "bad host localhost:8081"},
		{"other name", req("GET", "http://evil.example/"), 403, "bad host"},
	})
	if got := HostName("[::1]:80"); got != "::1" {
		t.Fatalf("HostName: %q", got)
	}
}

func TestOrigin(t *testing.T) {
	run(t, Origin(AllowedOrigins([]string{"https://ide.example.com/"}), func(o string) string { return "bad origin " + o }), []check{
		{"none", req("GET", "http://h/"), 200, "passed"},
		{"allowed", req("GET", "http://h/", "Origin", "https://IDE.example.com"), 200, "passed"},
		{"other", req("GET", "http://h/", "Origin", "https://evil.example"), 403, "bad origin https://evil.example"},
	})
	run(t, Origin(SameOrigin, func(string) string { return "cross" }), []check{
		{"same", req("GET", "http://h:1/", "Origin", "http://h:1"), 200, "passed"},
		{"other port", req("GET", "http://h:1/", "Origin", "http://h:2"), 403, "cross"},
		{"null", req("GET", "http://h:1/", "Origin", "null"), 403, "cross"},
		{"with a path", req("GET", "http://h:1/", "Origin", "http://h:1/x"), 403, "cross"},
	})
}

func TestSameSiteAndMethods(t *testing.T) {
	run(t, SameSite("other site"), []check{
		{"same-origin", req("GET", "/", "Sec-Fetch-Site", "same-origin"), 200, "passed"},
		{"none", req("GET", "/", "Sec-Fetch-Site", "none"), 200, "passed"},
		{"cross-site", req("GET", "/", "Sec-Fetch-Site", "cross-site"), 403, "other site"},
		{"same-site", req("GET", "/", "Sec-Fetch-Site", "same-site"), 403, "other site"},
	})
	run(t, Methods("read-only", "GET", "HEAD"), []check{
		{"GET", req("GET", "/"), 200, "passed"},
		{"POST", req("POST", "/"), 405, "read-only"},
	})
	w := httptest.NewRecorder()
	Chain(ok, Methods("x", "GET", "HEAD")).ServeHTTP(w, httptest.NewRequest("DELETE", "/", nil))
	if w.Header().Get("Allow") != "GET, HEAD" {
		t.Fatalf("Allow: %q", w.Header().Get("Allow"))
	}
}

func TestNoCredentialsInURL(t *testing.T) {
	mw := NoCredentialsInURL(func(v string) bool { return strings.HasPrefix(v, "msm_") }, "in the URL")
	run(t, mw, []check{
		{"no query", req("GET", "/mcp"), 200, "passed"},
		{"plain query", req("GET", "/ui/?kind=note"), 200, "passed"},
		{"named like a credential", req("GET", "/mcp?API_KEY=x"), 400, "in the URL"},
		{"a token as a value", req("GET", "/mcp?x=msm_abc"), 400, "in the URL"},
	})
}

func TestAuthenticate(t *testing.T) {
	static := AuthenticatorFunc(func(r *http.Request) (Identity, *Refusal) {
		tok, ok := BearerToken(r)
		switch {
		case !ok:
			return Identity{}, &Refusal{}
		case tok == "msm_alice":
			return Identity{Agent: "alice"}, nil
		case strings.HasPrefix(tok, "msm_"):
			return Identity{}, &Refusal{Params: [][2]string{{"error", "invalid_token"}}}
		}
		return Identity{}, &Refusal{}
	})
	// A second authenticator beside the static tokens (an OAuth
	// resource server would be one).
	other := AuthenticatorFunc(func(r *http.Request) (Identity, *Refusal) {
		tok, _ := BearerToken(r)
		switch tok {
		case "jwt-bob":
			return Identity{Agent: "oauth:bob", Scopes: []string{"memory:read"}}, nil
		case "jwt-readonly":
			return Identity{}, &Refusal{Status: 403, Params: [][2]string{{"error", "insufficient_scope"}, {"scope", "memory:write"}}, Message: "needs memory:write"}
		}
		return Identity{}, &Refusal{Params: [][2]string{{"resource_metadata", "https://m.example/.well-known/oauth-protected-resource"}}}
	})
	h := Chain(ok, Authenticate(First(static, other), "mcp", "a valid token is required"))
	for _, c := range []struct {
		name, auth string
		status     int
		body, www  string
	}{
		{"static", "Bearer msm_alice", 200, "passed alice", ""},
		{"scheme is case-insensitive", "bearer msm_alice", 200, "passed alice", ""},
		{"second authenticator", "Bearer jwt-bob", 200, "passed oauth:bob", ""},
		{"no credentials", "", 401, "a valid token is required", `Bearer realm="mcp", resource_metadata="https://m.example/.well-known/oauth-protected-resource"`},
		{"bad static token", "Bearer msm_wrong", 401, "a valid token is required", `Bearer realm="mcp", error="invalid_token"`},
		{"insufficient scope", "Bearer jwt-readonly", 403, "needs memory:write", `Bearer realm="mcp", error="insufficient_scope", scope="memory:write"`},
		{"basic", "Basic bXNtX2FsaWNl", 401, "a valid token is required", `Bearer realm="mcp", resource_metadata=`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			if c.auth != "" {
				r.Header.Set("Authorization", c.auth)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != c.status || !strings.Contains(w.Body.String(), c.body) || !strings.HasPrefix(w.Header().Get("WWW-Authenticate"), c.www) {
				t.Fatalf("%d %q %q", w.Code, w.Body.String(), w.Header().Get("WWW-Authenticate"))
			}
		})
	}
}

func TestBody(t *testing.T) {
	var seen []byte
	mw := Body(BodyLimits{Max: 10, Timeout: time.Second, TooLarge: "too large", TooSlow: "too slow",
		Read: func(_ *http.Request, b []byte) { seen = b }})
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got, ok := BodyBytes(r)
		if r.Method == "POST" && (!ok || string(got) != string(b)) {
			t.Errorf("BodyBytes %q %v, body %q", got, ok, b)
		}
		_, _ = w.Write(b)
	})
	h := Chain(echo, mw)
	for _, c := range []struct {
		name, method, body string
		length             int64
		status             int
		want               string
	}{
		{"small", "POST", "0123456789", 10, 200, "0123456789"},
		{"declared too large", "POST", "01234567890", 11, 413, "too large"},
		{"chunked too large", "POST", "01234567890", -1, 413, "too large"},
		{"GET passes unread", "GET", "", 0, 200, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(c.method, "/", strings.NewReader(c.body))
			r.ContentLength = c.length
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != c.status || !strings.Contains(w.Body.String(), c.want) {
				t.Fatalf("%d %q", w.Code, w.Body.String())
			}
		})
	}
	if string(seen) != "0123456789" {
		t.Fatalf("Read saw %q", seen)
	}
}
