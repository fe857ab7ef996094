/**
 * A small OCI Distribution client over fetch: manifest GET/PUT, blob GET/HEAD and monolithic
 * upload (POST then PUT), the `WWW-Authenticate` Bearer/Basic challenge flow, and
 * credentials from the Docker config (`auths` and `docker-credential-*` helpers). Every
 * body fetched by digest is verified with SHA-256. Upstream failures map to the statuses
 * ToolHive answers with: 401/403 → 401, 404 → 404, 429 → 429, timeout → 504, else 502.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { definedOnly, findOutboundRefusal, outboundFetch, SkepError } from '../shared/index.js';
import type { OciRef } from './oci-ref.js';
import { PRIVATE_HOSTS_HINT } from './private-hosts.js';

export const MEDIA_INDEX = 'application/vnd.oci.image.index.v1+json';
export const MEDIA_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
export const MEDIA_CONFIG = 'application/vnd.oci.image.config.v1+json';
export const MEDIA_LAYER = 'application/vnd.oci.image.layer.v1.tar+gzip';
const MANIFEST_ACCEPT = [
  MEDIA_INDEX,
  MEDIA_MANIFEST,
  'application/vnd.docker.distribution.manifest.list.v2+json',
  'application/vnd.docker.distribution.manifest.v2+json',
].join(', ');

export interface Credentials {
  username: string;
  password: string;
}

export interface OciClientOptions {
  /** Replaces the guarded fetch (tests); the default applies the outbound address policy. */
  fetch?: typeof fetch;
  /**
   * Registries (`host`, `host:port`) that may be loopback or private. Any other registry —
   * and any host its token realm or redirects name — must be public: a skill reference comes
   * from the caller, and must not make Skep fetch from the loopback or a private network.
   */
  privateHosts?: readonly string[];
  /** Deadline for one whole operation (pull or push), milliseconds. */
  timeoutMs?: number;
  /** Looks up credentials for a registry host; default: the Docker config of `$HOME`. */
  credentials?: (host: string) => Promise<Credentials | undefined>;
  env?: NodeJS.ProcessEnv;
}

export function sha256Digest(data: Uint8Array): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`;
}

/** Loopback registries are spoken to over plain HTTP (as docker and go-containerregistry do). */
function isLoopbackHost(host: string): boolean {
  const name = host.replace(/:\d+$/, '').replace(/^\[|\]$/g, '');
  return name === 'localhost' || name === '::1' || /^127\.\d+\.\d+\.\d+$/.test(name);
}

function apiHost(registry: string): string {
  return registry === 'docker.io' ? 'registry-1.docker.io' : registry;
}

export function registryError(status: number, what: string): SkepError {
  if (status === 401 || status === 403) {
    return new SkepError(
      'unauthorized',
      `registry refused access to ${what} (HTTP ${status}); log in or check the credentials`,
    );
  }
  if (status === 404) return new SkepError('not_found', `${what} was not found in the registry`);
  if (status === 429)
    return new SkepError('rate_limited', `registry rate limit reached while fetching ${what}; retry later`);
  return new SkepError('bad_gateway', `registry answered HTTP ${status} for ${what}`);
}

function transportError(err: unknown, what: string): SkepError {
  if (err instanceof SkepError) return err;
  const refusal = findOutboundRefusal(err);
  if (refusal !== undefined) return new SkepError('forbidden', `${what}: ${refusal.message}`, { cause: err });
  const name = (err as Error).name;
  if (name === 'TimeoutError' || name === 'AbortError') {
    return new SkepError('gateway_timeout', `registry did not answer in time for ${what}`, { cause: err });
  }
  const cause = (err as { cause?: { code?: string } }).cause?.code;
  return new SkepError(
    'bad_gateway',
    `cannot reach the registry for ${what}${cause === undefined ? '' : ` (${cause})`}`,
    { cause: err },
  );
}

/** Credentials from `$DOCKER_CONFIG/config.json` (or `~/.docker/config.json`). */
export async function dockerCredentials(
  host: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<Credentials | undefined> {
  const dir = env['DOCKER_CONFIG'] ?? join(env['HOME'] ?? homedir(), '.docker');
  let config: {
    auths?: Record<string, { auth?: string; username?: string; password?: string }>;
    credHelpers?: Record<string, string>;
    credsStore?: string;
  };
  try {
    config = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8'));
  } catch {
    return undefined;
  }
  const keys =
    host === 'docker.io'
      ? ['https://index.docker.io/v1/', 'docker.io', 'index.docker.io']
      : [host, `https://${host}`];
  const helper = keys.map((k) => config.credHelpers?.[k]).find((h) => h !== undefined) ?? config.credsStore;
  if (helper !== undefined && /^[A-Za-z0-9_.-]+$/.test(helper)) {
    const fromHelper = await new Promise<Credentials | undefined>((res) => {
      const child = execFile(`docker-credential-${helper}`, ['get'], { timeout: 10_000 }, (err, stdout) => {
        if (err) return res(undefined);
        try {
          const out = JSON.parse(stdout) as { Username?: string; Secret?: string };
          res(out.Secret === undefined ? undefined : { username: out.Username ?? '', password: out.Secret });
        } catch {
          res(undefined);
        }
      });
      child.stdin?.end(keys[0]);
    });
    if (fromHelper !== undefined) return fromHelper;
  }
  for (const key of keys) {
    const entry = config.auths?.[key];
    if (entry === undefined) continue;
    if (entry.auth !== undefined) {
      const decoded = Buffer.from(entry.auth, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      if (colon !== -1) return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
    }
    if (entry.username !== undefined && entry.password !== undefined)
      return { username: entry.username, password: entry.password };
  }
  return undefined;
}

function parseChallenge(header: string): { scheme: string; params: Record<string, string> } {
  const space = header.indexOf(' ');
  const scheme = (space === -1 ? header : header.slice(0, space)).toLowerCase();
  const params: Record<string, string> = {};
  const re = /([A-Za-z_]+)="([^"]*)"/g;
  for (let m = re.exec(header); m !== null; m = re.exec(header)) params[m[1]!.toLowerCase()] = m[2]!;
  return { scheme, params };
}

export interface Manifest {
  mediaType: string;
  digest: string;
  bytes: Buffer;
}

/** One client per operation: it holds the auth state for one repository. */
export class OciSession {
  readonly #ref: OciRef;
  readonly #fetch: typeof fetch;
  readonly #signal: AbortSignal;
  readonly #credentials: (host: string) => Promise<Credentials | undefined>;
  readonly #base: string;
  readonly #push: boolean;
  #authorization: string | undefined;

  constructor(ref: OciRef, push: boolean, options: OciClientOptions = {}) {
    this.#ref = ref;
    this.#push = push;
    this.#fetch =
      options.fetch ?? outboundFetch({ privateHosts: options.privateHosts ?? [], hint: PRIVATE_HOSTS_HINT });
    this.#signal = AbortSignal.timeout(options.timeoutMs ?? 5 * 60_000);
    const env = options.env ?? process.env;
    this.#credentials = options.credentials ?? ((host) => dockerCredentials(host, env));
    const host = apiHost(ref.registry);
    this.#base = `${isLoopbackHost(host) ? 'http' : 'https'}://${host}/v2/${ref.repository}`;
  }

  get repositoryUrl(): string {
    return this.#base;
  }

  async #send(
    method: string,
    url: string,
    init: { headers?: Record<string, string>; body?: Uint8Array },
    what: string,
  ): Promise<Response> {
    const attempt = () =>
      this.#fetch(url, {
        method,
        headers: {
          ...init.headers,
          ...(this.#authorization === undefined ? {} : { authorization: this.#authorization }),
        },
        ...definedOnly({ body: init.body }),
        signal: this.#signal,
        redirect: 'follow',
      });
    try {
      let res = await attempt();
      if (res.status === 401 && this.#authorization === undefined) {
        const challenge = res.headers.get('www-authenticate');
        await res.body?.cancel();
        if (challenge !== null && (await this.#authenticate(challenge, what))) res = await attempt();
      }
      return res;
    } catch (err) {
      throw transportError(err, what);
    }
  }

  async #authenticate(header: string, what: string): Promise<boolean> {
    const { scheme, params } = parseChallenge(header);
    const creds = await this.#credentials(this.#ref.registry);
    if (scheme === 'basic') {
      if (creds === undefined) return false;
      this.#authorization = `Basic ${Buffer.from(`${creds.username}:${creds.password}`).toString('base64')}`;
      return true;
    }
    if (scheme !== 'bearer' || params['realm'] === undefined) return false;
    const url = new URL(params['realm']);
    if (params['service'] !== undefined) url.searchParams.set('service', params['service']);
    url.searchParams.set('scope', `repository:${this.#ref.repository}:${this.#push ? 'pull,push' : 'pull'}`);
    const headers: Record<string, string> = {};
    if (creds !== undefined)
      headers['authorization'] =
        `Basic ${Buffer.from(`${creds.username}:${creds.password}`).toString('base64')}`;
    let res: Response;
    try {
      res = await this.#fetch(url, { headers, signal: this.#signal });
    } catch (err) {
      throw transportError(err, `the token endpoint of ${this.#ref.registry}`);
    }
    if (!res.ok) {
      await res.body?.cancel();
      throw registryError(res.status, what);
    }
    const body = (await res.json()) as { token?: string; access_token?: string };
    const token = body.token ?? body.access_token;
    if (token === undefined) throw new SkepError('bad_gateway', 'registry token endpoint returned no token');
    this.#authorization = `Bearer ${token}`;
    return true;
  }

  /** GET a manifest by tag or digest; the digest of the bytes is verified against a digest reference. */
  async getManifest(reference: string): Promise<Manifest> {
    const what = `manifest ${this.#ref.registry}/${this.#ref.repository}@${reference}`;
    const res = await this.#send(
      'GET',
      `${this.#base}/manifests/${reference}`,
      { headers: { accept: MANIFEST_ACCEPT } },
      what,
    );
    if (!res.ok) {
      await res.body?.cancel();
      throw registryError(res.status, what);
    }
    const bytes = Buffer.from(await res.arrayBuffer());
    if (bytes.length > 4 * 1024 * 1024)
      throw new SkepError('skill_artifact_invalid', `${what} is larger than 4 MiB`);
    const digest = sha256Digest(bytes);
    if (reference.startsWith('sha256:') && digest !== reference) {
      throw new SkepError('bad_gateway', `${what}: content digest ${digest} does not match`);
    }
    const mediaType = (res.headers.get('content-type') ?? '').split(';')[0]!.trim();
    return { mediaType, digest, bytes };
  }

  /** GET a blob, refusing it past `maxBytes`, and verifies its digest. */
  async getBlob(digest: string, maxBytes: number): Promise<Buffer> {
    const what = `blob ${digest} of ${this.#ref.registry}/${this.#ref.repository}`;
    const res = await this.#send('GET', `${this.#base}/blobs/${digest}`, {}, what);
    if (!res.ok) {
      await res.body?.cancel();
      throw registryError(res.status, what);
    }
    const declared = Number(res.headers.get('content-length') ?? '0');
    if (declared > maxBytes) {
      await res.body?.cancel();
      throw new SkepError('skill_artifact_invalid', `${what} is larger than the ${maxBytes}-byte limit`);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    if (res.body !== null) {
      for await (const chunk of res.body) {
        size += chunk.length;
        if (size > maxBytes)
          throw new SkepError('skill_artifact_invalid', `${what} is larger than the ${maxBytes}-byte limit`);
        chunks.push(Buffer.from(chunk));
      }
    }
    const data = Buffer.concat(chunks);
    if (sha256Digest(data) !== digest)
      throw new SkepError('bad_gateway', `${what}: content does not match its digest`);
    return data;
  }

  async hasBlob(digest: string): Promise<boolean> {
    const what = `blob ${digest}`;
    const res = await this.#send('HEAD', `${this.#base}/blobs/${digest}`, {}, what);
    await res.body?.cancel();
    if (res.status === 404) return false;
    if (!res.ok) throw registryError(res.status, what);
    return true;
  }

  /** Monolithic upload: POST to open an upload session, then PUT the bytes with the digest. */
  async putBlob(data: Buffer, digest: string): Promise<void> {
    if (await this.hasBlob(digest)) return;
    const what = `upload of blob ${digest} to ${this.#ref.registry}/${this.#ref.repository}`;
    const start = await this.#send('POST', `${this.#base}/blobs/uploads/`, {}, what);
    await start.body?.cancel();
    if (start.status !== 202) throw registryError(start.status, what);
    const location = start.headers.get('location');
    if (location === null)
      throw new SkepError('bad_gateway', `${what}: the registry gave no upload location`);
    const url = new URL(location, this.#base);
    url.searchParams.set('digest', digest);
    const put = await this.#send(
      'PUT',
      url.toString(),
      {
        headers: { 'content-type': 'application/octet-stream' },
        body: data,
      },
      what,
    );
    await put.body?.cancel();
    if (put.status !== 201) throw registryError(put.status, what);
  }

  async putManifest(reference: string, bytes: Buffer, mediaType: string): Promise<void> {
    const what = `manifest ${this.#ref.registry}/${this.#ref.repository}:${reference}`;
    const res = await this.#send(
      'PUT',
      `${this.#base}/manifests/${reference}`,
      { headers: { 'content-type': mediaType }, body: bytes },
      what,
    );
    const text = await res.text();
    if (res.status !== 201) {
      const err = registryError(res.status, what);
      if (res.status === 400) {
        throw new SkepError('bad_gateway', `${err.message}: ${text.slice(0, 300)}`);
      }
      throw err;
    }
  }
}
