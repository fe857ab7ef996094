/**
 * A read-only OCI Distribution reader for image verification: resolves an image reference to
 * the digest its registry serves, and reads the cosign signature objects beside it
 * (`oci-signature.ts`). Anonymous unless given credentials (the ones the engine's pull uses,
 * `oci-signature-credentials.ts`): a registry's challenge is answered as the Docker Registry
 * token authentication specification says — `Bearer`: a pull token from the named realm, asked
 * for anonymously or with HTTP Basic credentials; `Basic` (RFC 7617): the credentials
 * themselves. Loopback registries are spoken to over plain HTTP, as docker and podman do for
 * `localhost`; credentials never go over plain HTTP anywhere else. Every blob is checked
 * against its digest. Loaded lazily by the container runtime, only for workloads whose image
 * is verified.
 */
import { sha256, type SignatureStore, type StoredManifest } from './oci-signature.js';

const MANIFEST_ACCEPT = [
  'application/vnd.oci.image.index.v1+json',
  'application/vnd.oci.image.manifest.v1+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
  'application/vnd.docker.distribution.manifest.v2+json',
].join(', ');
const MAX_MANIFEST_BYTES = 4 * 1024 * 1024;

/** An image reference split the way docker normalizes it (`nginx` → `docker.io/library/nginx:latest`). */
export interface ImageRef {
  registry: string;
  repository: string;
  tag?: string;
  digest?: string;
}

export class RegistryReadError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'RegistryReadError';
  }
}

/** Parses `[registry/]repository[:tag][@sha256:hex]` with docker's defaults. */
export function parseImageRef(image: string): ImageRef {
  let rest = image;
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at !== -1) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!/^sha256:[0-9a-f]{64}$/.test(digest)) throw new RegistryReadError(`image "${image}": bad digest`);
  }
  let tag: string | undefined;
  const colon = rest.lastIndexOf(':');
  if (colon > rest.lastIndexOf('/')) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
  }
  const slash = rest.indexOf('/');
  const first = slash === -1 ? '' : rest.slice(0, slash);
  let registry = 'docker.io';
  let repository = rest;
  if (first.includes('.') || first.includes(':') || first === 'localhost') {
    registry = first;
    repository = rest.slice(slash + 1);
  }
  if (registry === 'docker.io' && !repository.includes('/')) repository = `library/${repository}`;
  if (!/^[a-z0-9]+(?:[._-][a-z0-9]+)*(?:\/[a-z0-9]+(?:[._-][a-z0-9]+)*)*$/.test(repository))
    throw new RegistryReadError(`image "${image}": bad repository name "${repository}"`);
  return { registry, repository, ...(digest === undefined ? { tag: tag ?? 'latest' } : { digest }) };
}

function isLoopback(host: string): boolean {
  const name = host.replace(/:\d+$/, '').replace(/^\[|\]$/g, '');
  return name === 'localhost' || name === '::1' || /^127\.\d+\.\d+\.\d+$/.test(name);
}

/** A reader of one repository; `resolveDigest` gives the digest a tag points at. */
export interface RegistryReader extends SignatureStore {
  readonly dockerReference: string;
  resolveDigest(reference: string): Promise<string>;
}

/** A URL that credentials may be sent to: HTTPS, or plain HTTP on the loopback interface. */
function safeForCredentials(url: URL): boolean {
  return url.protocol === 'https:' || (url.protocol === 'http:' && isLoopback(url.host));
}

export function registryReader(
  ref: ImageRef,
  options: {
    fetch?: typeof fetch;
    timeoutMs?: number;
    credentials?: { username: string; password: string };
  } = {},
): RegistryReader {
  const doFetch = options.fetch ?? fetch;
  const host = ref.registry === 'docker.io' ? 'registry-1.docker.io' : ref.registry;
  const base = `${isLoopback(host) ? 'http' : 'https'}://${host}/v2/${ref.repository}`;
  const signal = AbortSignal.timeout(options.timeoutMs ?? 60_000);
  const basic =
    options.credentials === undefined
      ? undefined
      : `Basic ${Buffer.from(`${options.credentials.username}:${options.credentials.password}`).toString('base64')}`;
  let authorization: string | undefined;

  /** The `Authorization` that answers `challenge`, or undefined when none can. */
  const answer = async (challenge: string): Promise<string | undefined> => {
    if (/^basic\b/i.test(challenge))
      return basic !== undefined && safeForCredentials(new URL(base)) ? basic : undefined;
    const realm = /realm="([^"]+)"/i.exec(challenge)?.[1];
    if (!/^bearer /i.test(challenge) || realm === undefined) return undefined;
    const tokenUrl = new URL(realm);
    const service = /service="([^"]+)"/i.exec(challenge)?.[1];
    if (service !== undefined) tokenUrl.searchParams.set('service', service);
    tokenUrl.searchParams.set('scope', `repository:${ref.repository}:pull`);
    const withCredentials = basic !== undefined && safeForCredentials(tokenUrl);
    const tokenRes = await doFetch(tokenUrl, {
      signal,
      ...(withCredentials ? { headers: { authorization: basic } } : {}),
    });
    if (!tokenRes.ok) {
      await tokenRes.body?.cancel();
      return undefined;
    }
    const body = (await tokenRes.json()) as { token?: string; access_token?: string };
    const token = body.token ?? body.access_token;
    return token === undefined ? undefined : `Bearer ${token}`;
  };

  const send = async (url: string, headers: Record<string, string>): Promise<Response> => {
    const attempt = () =>
      doFetch(url, {
        headers: { ...headers, ...(authorization === undefined ? {} : { authorization }) },
        signal,
        redirect: 'follow',
      });
    const res = await attempt();
    if (res.status !== 401 || authorization !== undefined) return res;
    const found = await answer(res.headers.get('www-authenticate') ?? '');
    if (found === undefined) return res;
    await res.body?.cancel();
    authorization = found;
    return attempt();
  };

  const manifest = async (reference: string): Promise<StoredManifest | undefined> => {
    const what = `${ref.registry}/${ref.repository}@${reference}`;
    const res = await send(`${base}/manifests/${reference}`, { accept: MANIFEST_ACCEPT });
    if (res.status === 404) {
      await res.body?.cancel();
      return undefined;
    }
    if (!res.ok) {
      await res.body?.cancel();
      throw new RegistryReadError(
        `registry answered HTTP ${res.status} for the manifest ${what}`,
        res.status,
      );
    }
    const bytes = Buffer.from(await res.arrayBuffer());
    if (bytes.length > MAX_MANIFEST_BYTES) throw new RegistryReadError(`the manifest ${what} is too large`);
    const digest = sha256(bytes);
    if (reference.startsWith('sha256:') && digest !== reference)
      throw new RegistryReadError(`the manifest ${what} does not match its digest`);
    return { bytes, digest };
  };

  const readOnly = (): Promise<never> =>
    Promise.reject(new RegistryReadError('the image verification reader is read-only'));

  return {
    dockerReference: `${ref.registry}/${ref.repository}`,
    findManifest: manifest,
    async resolveDigest(reference) {
      const found = await manifest(reference);
      if (found === undefined)
        throw new RegistryReadError(
          `${ref.registry}/${ref.repository}:${reference} is not in the registry`,
          404,
        );
      return found.digest;
    },
    async getBlob(digest, maxBytes) {
      const res = await send(`${base}/blobs/${digest}`, {});
      if (!res.ok) {
        await res.body?.cancel();
        throw new RegistryReadError(
          `registry answered HTTP ${res.status} for the blob ${digest}`,
          res.status,
        );
      }
      const data = Buffer.from(await res.arrayBuffer());
      if (data.length > maxBytes) throw new RegistryReadError(`the blob ${digest} is too large`);
      if (sha256(data) !== digest)
        throw new RegistryReadError(`the blob ${digest} does not match its digest`);
      return data;
    },
    async referrers(digest) {
      // OCI distribution-spec 1.1 `GET /v2/<name>/referrers/<digest>`. A registry without the API
      // answers 404 (or, older ones, another error): the caller falls back to the tag scheme.
      const res = await send(`${base}/referrers/${digest}`, {
        accept: 'application/vnd.oci.image.index.v1+json',
      });
      if (!res.ok) {
        await res.body?.cancel();
        return undefined;
      }
      const data = Buffer.from(await res.arrayBuffer());
      return data.length > MAX_MANIFEST_BYTES ? undefined : data;
    },
    putBlob: readOnly,
    putManifest: readOnly,
  };
}
