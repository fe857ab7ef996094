/**
 * An OIDC issuer on loopback whose discovery document and JWKS are served only to a caller
 * presenting the bearer token it currently accepts (RFC 6750 §2.1), as a Kubernetes API server
 * serves its service-account issuer's keys: every other request is 401. Over https with a
 * certificate of its own (`ca`, the cluster CA) or plain http. It records the `authorization`
 * header of each request and signs RS256 tokens with its one key. Closed when the test ends.
 */
import { createServer as createHttpServer, type RequestListener } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TestContext } from 'node:test';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { generateSelfSignedCert } from '../../src/control/operator/index.js';

export interface GuardedIssuer {
  issuer: string;
  /** The key id of the issuer's key (a forged token can claim it too). */
  kid: string;
  /** The certificate the https issuer presents (its own authority); undefined over http. */
  ca: string | undefined;
  /** The `authorization` header of each discovery / JWKS request, in order. */
  seen: Array<string | undefined>;
  /** A token with `claims`, this issuer as `iss`, issued now, valid 5 minutes. */
  sign(claims: Record<string, unknown>): Promise<string>;
}

export interface GuardedIssuerOptions {
  /** The one bearer token the issuer accepts. */
  acceptedToken: string;
  /** https with a self-signed certificate for 127.0.0.1 (default http). */
  tls?: boolean;
}

const KID = 'k1';

export async function startGuardedIssuer(t: TestContext, o: GuardedIssuerOptions): Promise<GuardedIssuer> {
  const { privateKey, publicKey } = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: KID, alg: 'RS256', use: 'sig' };
  const seen: Array<string | undefined> = [];
  let issuer = '';
  // The paths a Kubernetes API server serves them at.
  const listener: RequestListener = (req, res) => {
    seen.push(req.headers.authorization);
    if (req.headers.authorization !== `Bearer ${o.acceptedToken}`) return void res.writeHead(401).end();
    const body =
      req.url === '/.well-known/openid-configuration'
        ? { issuer, jwks_uri: `${issuer}/openid/v1/jwks`, id_token_signing_alg_values_supported: ['RS256'] }
        : req.url === '/openid/v1/jwks'
          ? { keys: [jwk] }
          : undefined;
    if (body === undefined) return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  };
  const tls = o.tls === true ? generateSelfSignedCert(['127.0.0.1']) : undefined;
  const server = tls === undefined ? createHttpServer(listener) : createHttpsServer(tls, listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  issuer = `${tls === undefined ? 'http' : 'https'}://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    issuer,
    kid: KID,
    ca: tls?.cert,
    seen,
    sign: (claims) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: 'RS256', kid: KID })
        .setIssuer(issuer)
        .setIssuedAt()
        .setExpirationTime('5m')
        .sign(privateKey),
  };
}
