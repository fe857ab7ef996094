/**
 * Self-signed serving certificates for the admission webhook, for tests and local runs (in a
 * cluster cert-manager supplies the certificate, see deploy/). Uses the `openssl` CLI because
 * node:crypto can parse but not issue X.509 certificates.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { isIP } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SkepError } from '../../shared/index.js';

export interface ServingCert {
  /** PEM certificate (also the CA bundle, since it is self-signed). */
  cert: string;
  /** PEM private key. */
  key: string;
}

/** Issues an EC P-256 certificate valid for the given DNS names and IP addresses. */
export function generateSelfSignedCert(hosts: string[], days = 365): ServingCert {
  if (hosts.length === 0) throw new Error('generateSelfSignedCert needs at least one host');
  const dir = mkdtempSync(join(tmpdir(), 'skep-cert-'));
  try {
    const san = hosts.map((h) => (isIP(h) === 0 ? `DNS:${h}` : `IP:${h}`)).join(',');
    const keyFile = join(dir, 'tls.key');
    const certFile = join(dir, 'tls.crt');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        String(days),
        '-subj',
        `/CN=${hosts[0]}`,
        '-addext',
        `subjectAltName=${san}`,
        '-addext',
        'basicConstraints=critical,CA:TRUE',
        '-keyout',
        keyFile,
        '-out',
        certFile,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'], timeout: 30_000 },
    );
    return { cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8') };
  } catch (err) {
    throw new SkepError(
      'unavailable',
      `cannot generate a self-signed certificate with openssl: ${err instanceof Error ? err.message : String(err)}`,
      {
        cause: err,
      },
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
