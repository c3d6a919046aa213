// Package httpguard holds the checks of the HTTP transport as one ordered
// chain of middleware: each check is a Middleware, a func(http.Handler)
// http.Handler that refuses a request or passes it on, and is tested alone
// with httptest. `/mcp` and `/ui/` under --http and the standalone ui
// command compose their front doors from these pieces with Chain; adding
// a check is one function and one line in a chain.
//
// # Refusals
//
// Every check refuses with Refuse, which decides on the headers alone: a
// request body that was not read is never read afterwards (the connection
// is closed after the answer instead), so a client that trickles its body
// cannot delay a refusal. OnRefuse, first in a chain, hears every refusal
// (the server logs them).
//
// # Authentication
//
// Authenticate asks an Authenticator who sent a request. The static bearer
// tokens are one Authenticator; First puts several side by side (an OAuth
// resource server beside the tokens). The Identity it returns is in the
// request's context (IdentityFrom) for the handlers below.
//
// # Connections
//
// Listener bounds open connections and keeps part of them for clients
// that have authenticated: a connection that has not yet carried an
// authenticated request, or is reading a request body, is pending;
// pending connections may hold at most half of the slots, and the oldest
// pending one is closed to make room for a new connection.
//
// Imports: nothing of the project.
package httpguard
