// A real OAuth 2.1 authorization server for tests/auth.rs: the certified
// `oidc-provider` (nobody here wrote it) on 127.0.0.1, issuing JWT access
// tokens by client credentials, with the resource (RFC 8707 audience) the
// client asks for. Usage: node idp.mjs PORT DIR KID
//   PORT  the loopback port to listen on (the issuer is http://127.0.0.1:PORT)
//   DIR   where it writes signing.json: its private signing key (PKCS#8 PEM)
//         and kid, so tests can also sign tokens the provider itself would
//         not issue (expired, another issuer) with the trusted key
//   KID   the signing key's id: start again with another to rotate keys
// Clients: `reader` (secret `reader-secret`, scope memory:read) and `writer`
// (secret `writer-secret`, scopes memory:read memory:write). Prints
// `listening` on stdout once it accepts connections.
import Provider, { errors } from 'oidc-provider';
import { generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const [port, dir, kid] = process.argv.slice(2);
if (!port || !dir || !kid) {
  console.error('usage: node idp.mjs PORT DIR KID');
  process.exit(2);
}
const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const jwk = { ...privateKey.export({ format: 'jwk' }), kid, alg: 'ES256', use: 'sig' };
writeFileSync(
  join(dir, 'signing.json'),
  JSON.stringify({ kid, pem: privateKey.export({ format: 'pem', type: 'pkcs8' }) }),
);

const client = (id, scope) => ({
  client_id: id,
  client_secret: `${id}-secret`,
  grant_types: ['client_credentials'],
  redirect_uris: [],
  response_types: [],
  id_token_signed_response_alg: 'ES256',
  scope,
});

const issuer = `http://127.0.0.1:${port}`;
const provider = new Provider(issuer, {
  clients: [client('reader', 'memory:read'), client('writer', 'memory:read memory:write')],
  jwks: { keys: [jwk] },
  scopes: ['memory:read', 'memory:write'],
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      getResourceServerInfo(ctx, resource) {
        if (!/^https?:\/\//.test(resource)) throw new errors.InvalidTarget();
        return {
          scope: 'memory:read memory:write',
          audience: resource,
          accessTokenTTL: 600,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'ES256' } },
        };
      },
    },
  },
});
provider.on('server_error', (ctx, err) => console.error('server_error', err));
const server = provider.listen(Number(port), '127.0.0.1', () => {
  console.log('listening');
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
