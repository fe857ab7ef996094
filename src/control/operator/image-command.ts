/**
 * The command of a stdio server whose MCPServer names none: the image's own `Entrypoint` and
 * `Cmd`, read from its registry as the container runtime would (OCI Distribution Specification
 * v1.1 "Pulling manifests" and "Pulling blobs": the manifest by tag or digest, an image index
 * resolved to the platform's manifest, then the configuration blob its `config` descriptor
 * names; OCI Image Format Specification, image configuration `config.Entrypoint` /
 * `config.Cmd`). Every body fetched by digest is verified. The result is cached by manifest
 * digest, which names immutable content; a tag is resolved on every call (it may move), and the
 * rendered pod is pinned to the digest that was read, so it runs exactly the image whose
 * command it was given.
 */
import { isRecord, SkepError } from '../../shared/index.js';
import { type Credentials, MEDIA_INDEX, OciSession, parseOciRef } from '../../skills/index.js';

export interface ImageCommand {
  /** The image reference pinned to the manifest digest that was read (`name@sha256:…`). */
  pinned: string;
  digest: string;
  entrypoint: string[];
  cmd: string[];
}

/** The `.dockerconfigjson` documents of a pod's image pull secrets (`{auths: {host: {auth|username,password}}}`). */
export type DockerConfigs = readonly unknown[];

/** Reads the command of an image; throws a SkepError naming what could not be read. */
export type ImageCommandReader = (image: string, pullSecrets?: DockerConfigs) => Promise<ImageCommand>;

/**
 * Credentials for `host` from pull secrets, as the kubelet reads them: `auths` keyed by the
 * registry host (optionally with a scheme or path), each with `auth` (base64 `user:password`)
 * or `username` and `password`. The first secret that names the host wins.
 */
export function pullSecretCredentials(configs: DockerConfigs, host: string): Credentials | undefined {
  for (const config of configs) {
    const auths = isRecord(config) && isRecord(config['auths']) ? config['auths'] : {};
    for (const [key, entry] of Object.entries(auths)) {
      const keyHost = key.replace(/^https?:\/\//, '').split('/')[0];
      const same = keyHost === host || (host === 'registry-1.docker.io' && keyHost === 'index.docker.io');
      if (!same || !isRecord(entry)) continue;
      if (typeof entry['username'] === 'string' && typeof entry['password'] === 'string')
        return { username: entry['username'], password: entry['password'] };
      if (typeof entry['auth'] === 'string') {
        const text = Buffer.from(entry['auth'], 'base64').toString('utf8');
        const at = text.indexOf(':');
        if (at > 0) return { username: text.slice(0, at), password: text.slice(at + 1) };
      }
    }
  }
  return undefined;
}

export interface ImageCommandOptions {
  /** Replaces `fetch` (tests). */
  fetch?: typeof fetch;
  credentials?: (host: string) => Promise<Credentials | undefined>;
  /** The platform of an image index to read (default linux/amd64, else the first linux entry). */
  platform?: { os: string; architecture: string };
  timeoutMs?: number;
}

const DOCKER_LIST = 'application/vnd.docker.distribution.manifest.list.v2+json';
/** An image configuration is a small JSON document; anything larger is refused. */
const MAX_CONFIG_BYTES = 4 * 1024 * 1024;

const strings = (v: unknown): string[] =>
  Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];

function parseJson(bytes: Buffer, what: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new SkepError('bad_gateway', `${what} is not JSON`);
  }
  if (!isRecord(value)) throw new SkepError('bad_gateway', `${what} is not a JSON object`);
  return value;
}

/** The entry of an image index for `platform`, else the first linux one. */
function pickManifest(
  index: Record<string, unknown>,
  platform: { os: string; architecture: string },
): string {
  const entries = Array.isArray(index['manifests']) ? index['manifests'].filter(isRecord) : [];
  const on = (e: Record<string, unknown>) => (isRecord(e['platform']) ? e['platform'] : {});
  const exact = entries.find(
    (e) => on(e)['os'] === platform.os && on(e)['architecture'] === platform.architecture,
  );
  const chosen = exact ?? entries.find((e) => on(e)['os'] === 'linux');
  const digest = chosen?.['digest'];
  if (typeof digest !== 'string')
    throw new SkepError(
      'bad_gateway',
      `the image index has no ${platform.os}/${platform.architecture} image`,
    );
  return digest;
}

export function createImageCommandReader(options: ImageCommandOptions = {}): ImageCommandReader {
  const cache = new Map<string, { entrypoint: string[]; cmd: string[] }>();
  const platform = options.platform ?? { os: 'linux', architecture: 'amd64' };
  return async (image, pullSecrets = []) => {
    const ref = parseOciRef(image);
    // The pod's pull secrets first (what the kubelet would use), then the operator's own.
    const own = options.credentials;
    const credentials =
      pullSecrets.length === 0
        ? own
        : async (host: string) => pullSecretCredentials(pullSecrets, host) ?? (await own?.(host));
    // The image's registry is where the cluster pulls it from anyway, private or not.
    const session = new OciSession(ref, false, {
      ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
      ...(credentials === undefined ? {} : { credentials }),
      privateHosts: [ref.registry],
      timeoutMs: options.timeoutMs ?? 30_000,
    });
    const key = (digest: string) => `${ref.registry}/${ref.repository}@${digest}`;
    // `name@digest` without the tag: some runtimes refuse a reference with both.
    const name =
      ref.tag !== undefined && image.endsWith(`:${ref.tag}`) ? image.slice(0, -ref.tag.length - 1) : image;
    const pin = (digest: string) => (ref.digest === undefined ? `${name}@${digest}` : image);
    if (ref.digest !== undefined) {
      const hit = cache.get(key(ref.digest));
      if (hit !== undefined) return { pinned: image, digest: ref.digest, ...hit };
    }
    const top = await session.getManifest(ref.digest ?? ref.tag ?? 'latest');
    const hit = cache.get(key(top.digest));
    if (hit !== undefined) return { pinned: pin(top.digest), digest: top.digest, ...hit };
    let manifest = parseJson(top.bytes, `the manifest of ${image}`);
    const mediaType = top.mediaType || String(manifest['mediaType'] ?? '');
    if (mediaType === MEDIA_INDEX || mediaType === DOCKER_LIST || Array.isArray(manifest['manifests'])) {
      const child = await session.getManifest(pickManifest(manifest, platform));
      manifest = parseJson(child.bytes, `the manifest of ${image}`);
    }
    const config = isRecord(manifest['config']) ? manifest['config']['digest'] : undefined;
    if (typeof config !== 'string')
      throw new SkepError('bad_gateway', `the manifest of ${image} names no configuration`);
    const body = parseJson(await session.getBlob(config, MAX_CONFIG_BYTES), `the configuration of ${image}`);
    const c = isRecord(body['config']) ? body['config'] : {};
    const found = { entrypoint: strings(c['Entrypoint']), cmd: strings(c['Cmd']) };
    cache.set(key(top.digest), found);
    return { pinned: pin(top.digest), digest: top.digest, ...found };
  };
}
