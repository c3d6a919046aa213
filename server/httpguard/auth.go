package httpguard

import (
	"context"
	"net/http"
	"strconv"
	"strings"
)

// Identity is who sent a request: the agent's name and, when the
// authenticator knows them, its scopes.
type Identity struct {
	Agent  string
	Scopes []string
}

type identityKey struct{}

// WithIdentity marks ctx as a request of id.
func WithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// IdentityFrom is the identity Authenticate found, or the zero Identity.
func IdentityFrom(ctx context.Context) Identity {
	id, _ := ctx.Value(identityKey{}).(Identity)
	return id
}

// Refusal is an authenticator's no: the parameters of the
// WWW-Authenticate challenge (RFC 6750: error, error_description, scope;
// RFC 9728: resource_metadata), the status (401 when 0; 403 for
// insufficient_scope) and the text of the answer ("" for the
// middleware's own). Challenge, when set, is the whole WWW-Authenticate value, used as it
// is (an OAuth resource server's); Header adds response headers (such as
// Retry-After).
type Refusal struct {
	Status    int
	Params    [][2]string
	Message   string
	Challenge string
	Header    [][2]string
}

// Authenticator decides who sent a request, from its headers only. It
// returns the identity, or a refusal; a refusal without an error
// parameter means the request carried no credential it knows.
type Authenticator interface {
	Authenticate(r *http.Request) (Identity, *Refusal)
}

// AuthenticatorFunc adapts a function to Authenticator.
type AuthenticatorFunc func(r *http.Request) (Identity, *Refusal)

// Authenticate calls f(r).
func (f AuthenticatorFunc) Authenticate(r *http.Request) (Identity, *Refusal) { return f(r) }

// First tries each authenticator in turn and returns the first identity.
// When all refuse, the first refusal that names an error wins (a token
// one of them recognised and found bad), else the last.
func First(as ...Authenticator) Authenticator {
	return AuthenticatorFunc(func(r *http.Request) (Identity, *Refusal) {
		var last, named *Refusal
		for _, a := range as {
			id, no := a.Authenticate(r)
			if no == nil {
				return id, nil
			}
			last = no
			if named == nil && no.param("error") != "" {
				named = no
			}
		}
		if named != nil {
			return Identity{}, named
		}
		if last == nil {
			last = &Refusal{}
		}
		return Identity{}, last
	})
}

func (no *Refusal) param(k string) string {
	for _, p := range no.Params {
		if p[0] == k {
			return p[1]
		}
	}
	return ""
}

// BearerToken is the token of an Authorization: Bearer header.
func BearerToken(r *http.Request) (string, bool) {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(tok), true
}

// Authenticate refuses a request a does not accept, with a Bearer
// challenge of realm and msg (unless the refusal has its own text), and
// puts the identity of one it accepts in the request's context. The
// connection of an accepted request keeps its slot (Trust).
func Authenticate(a Authenticator, realm, msg string) Middleware {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id, no := a.Authenticate(r)
			if no != nil {
				status := no.Status
				if status == 0 {
					status = http.StatusUnauthorized
				}
				c := no.Challenge
				if c == "" {
					c = challenge(realm, no.Params)
				}
				w.Header().Set("WWW-Authenticate", c)
				for _, h := range no.Header {
					w.Header().Set(h[0], h[1])
				}
				text := no.Message
				if text == "" {
					text = msg
				}
				Refuse(w, r, status, text)
				return
			}
			Trust(r.Context())
			next.ServeHTTP(w, r.WithContext(WithIdentity(r.Context(), id)))
		})
	}
}

// challenge is a Bearer WWW-Authenticate value.
func challenge(realm string, params [][2]string) string {
	var b strings.Builder
	b.WriteString(`Bearer realm=`)
	b.WriteString(strconv.Quote(realm))
	for _, p := range params {
		b.WriteString(", ")
		b.WriteString(p[0])
		b.WriteString("=")
		b.WriteString(strconv.Quote(p[1]))
	}
	return b.String()
}
