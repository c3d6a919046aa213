// Package oauth makes the HTTP transport an OAuth 2.1 resource server, as
// the MCP authorization spec asks (SPEC 11.2): an organisation's own
// authorization server (Keycloak, Entra, Okta, Dex, node-oidc-provider)
// issues access tokens, and this package only checks them. It issues no
// token, shows no login page and registers no client.
//
// A Resource reads the issuer's metadata (RFC 8414, else OpenID
// discovery) in the background, retrying with backoff while the issuer
// cannot be reached; it serves this server's own metadata (RFC 9728,
// Handler) and checks a request's bearer token (Authenticate):
//
//   - a JWT (RFC 9068) against the issuer's JWKS, fetched with bounded
//     size and time, cached, refetched for an unknown key id at most once
//     a minute: an asymmetric signature (never none or HMAC), iss, exp and
//     nbf with a small skew, and an aud that names this resource (RFC
//     8707), so a token minted for another server is refused;
//   - any other token through the issuer's RFC 7662 introspection, when
//     it has an endpoint and the server has client credentials for it,
//     cached until the token expires and at most CacheMax.
//
// The agent is "oauth:" and the token's client_id (or sub, or the claim
// AgentClaim names), so that it can never pass for a static token's
// agent, whose names cannot hold a colon.
//
// Imports: server/scopes.
package oauth
