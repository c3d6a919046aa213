// The authorization server of the OAuth end-to-end tests
// (tests/oauth_test.go): node-oidc-provider, the certified OpenID
// provider, installed by scripts/oidc-provider.sh. It issues JWT access
// tokens for the resource the test names (RFC 8707), through client
// credentials and the authorization code flow with PKCE, and opaque
// ones for one client, which the server checks by introspection.
//
//   node provider.mjs CONFIG.json
//
// CONFIG: {dir, port, resource, otherResource, jwk} (jwk: the RSA private
// key the test made, so that it can also sign tokens of its own with the
// issuer's key). It prints "ready ISSUER" once it listens.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const cfg = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const { default: Provider, errors } = await import(pathToFileURL(join(cfg.dir, 'node_modules/oidc-provider/lib/index.js')).href);

const issuer = `http://127.0.0.1:${cfg.port}`;
const all = 'memory:read memory:write memory:destructive';
const resources = new Set([cfg.resource, cfg.otherResource]);

const provider = new Provider(issuer, {
  jwks: { keys: [cfg.jwk] },
  // The memory:* scopes are listed, or a client would get more than its
  // own (oidc-provider grants only scopes it knows).
  scopes: ['openid', 'offline_access', 'memory:read', 'memory:write', 'memory:destructive'],
  clients: [
    { client_id: 'reader', client_secret: 'reader-secret', grant_types: ['client_credentials'], response_types: [], redirect_uris: [], scope: 'memory:read' },
    { client_id: 'writer', client_secret: 'writer-secret', grant_types: ['client_credentials'], response_types: [], redirect_uris: [], scope: all },
    { client_id: 'opaque', client_secret: 'opaque-secret', grant_types: ['client_credentials'], response_types: [], redirect_uris: [], scope: 'memory:read' },
    // The memory server itself, for introspection.
    { client_id: 'memory-server', client_secret: 'memory-server-secret', grant_types: [], response_types: [], redirect_uris: [] },
    // A host that signs a person in: authorization code with PKCE, a
    // public client.
    { client_id: 'desktop', token_endpoint_auth_method: 'none', grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], redirect_uris: ['http://127.0.0.1:1/callback'], scope: `openid offline_access ${all}` },
  ],
  pkce: { required: () => true },
  features: {
    devInteractions: { enabled: true }, // the login and consent pages the test drives
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => cfg.resource,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, indicator, client) => {
        if (!resources.has(indicator)) throw new errors.InvalidTarget();
        return {
          scope: all,
          audience: indicator,
          accessTokenTTL: 600,
          accessTokenFormat: client.clientId === 'opaque' ? 'opaque' : 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        };
      },
    },
  },
  // The person the authorization code flow signs in.
  findAccount: (ctx, id) => ({ accountId: id, claims: () => ({ sub: id }) }),
});
provider.proxy = false;
provider.listen(cfg.port, '127.0.0.1', () => console.log(`ready ${issuer}`));
