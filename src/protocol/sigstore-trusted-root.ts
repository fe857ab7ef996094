/**
 * The trusted root a `trusted_root` setting names: the path of a Sigstore `trusted_root.json`,
 * or the built-in name `sigstore-public-good` — the certificate authority (Fulcio,
 * fulcio.sigstore.dev) and transparency logs (Rekor, rekor.sigstore.dev) of Sigstore's
 * public-good instance, the ones `cosign sign` uses by default.
 *
 * The public-good root is obtained as Sigstore's own clients obtain it: the `trusted_root.json`
 * target of the Sigstore TUF repository (The Update Framework specification, "Detailed client
 * workflow"), through `@sigstore/tuf`, whose TUF root metadata ships in the package (its `seeds.json`).
 * TUF metadata and the target are cached in `<cache dir>/sigstore-tuf`; while the cached
 * metadata has not expired no request is made (`forceCache`), otherwise it is refreshed from the
 * repository (`SKEP_SIGSTORE_TUF_URL` names a mirror of it; the signatures are still checked
 * with the public-good TUF root keys).
 *
 * When the repository cannot be reached or its metadata cannot be refreshed (no network,
 * expired metadata), the newest copy at hand is used rather than nothing: the `trusted_root.json`
 * last written to the cache (only a target that TUF verified, or the shipped copy, is ever written there),
 * else the copy shipped in `@sigstore/tuf`'s `seeds.json`. That copy is not refreshed: certificate
 * authorities or logs added since are missing from it, so a failure to verify against it says
 * which copy was used and why.
 *
 * `@sigstore/tuf` and the verification library are loaded lazily, when a keyless check needs them.
 */
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { TrustMaterial } from '@sigstore/verify';
import type { KeylessCheck, KeylessResult } from './oci-signature.js';
import type { IdentityPolicy } from './sigstore-verify.js';

/** The built-in name of the public-good Sigstore instance's trusted root. */
export const PUBLIC_GOOD_TRUSTED_ROOT = 'sigstore-public-good';
/** A mirror of the Sigstore TUF repository, instead of the public one. */
export const TUF_URL_ENV = 'SKEP_SIGSTORE_TUF_URL';
/** The Sigstore TUF repository, which `@sigstore/tuf`'s `seeds.json` is keyed by. */
const PUBLIC_TUF_URL = 'https://tuf-repo-cdn.sigstore.dev';
const TARGET = 'trusted_root.json';
/** One attempt, a short wait: an unreachable repository falls back to the cached copy. */
const FETCH_TIMEOUT_MS = 5_000;

/** A trusted root, ready to verify against, and how it was obtained (for messages). */
export interface ResolvedTrustedRoot {
  trust: TrustMaterial;
  /** The file, or `sigstore-public-good` and where its copy came from. */
  source: string;
  /** Set when the public-good root could not be refreshed through TUF: why, and which copy is used. */
  fallback?: string;
}

export interface TrustedRootOptions {
  /** Skep's cache folder (`resolvePaths().cacheDir`): the TUF cache goes in `sigstore-tuf/` there. */
  cacheDir: string;
  /** Read for `SKEP_SIGSTORE_TUF_URL`. */
  env: NodeJS.ProcessEnv;
  /** What a relative path is resolved against (the current folder when absent). */
  baseDir?: string;
}

/**
 * The trusted root `value` names: `sigstore-public-good`, or a `trusted_root.json` file. Throws
 * `SignatureError` naming the value when it cannot be used; a value that looks like a name but is
 * no file is told the built-in name.
 */
export async function resolveTrustedRoot(
  value: string,
  options: TrustedRootOptions,
): Promise<ResolvedTrustedRoot> {
  if (value === PUBLIC_GOOD_TRUSTED_ROOT) return loadPublicGoodTrustedRoot(options);
  const { loadTrustedRoot } = await import('./sigstore-verify.js');
  const { SignatureError } = await import('./oci-signature.js');
  const path = resolve(options.baseDir ?? '.', value);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new SignatureError(
      'bad_key',
      `cannot read "${path}": ${code ?? (err as Error).message}${code === 'ENOENT' ? notANameHint(value) : ''}`,
    );
  }
  try {
    return { trust: loadTrustedRoot(text), source: path };
  } catch (err) {
    throw new SignatureError('bad_key', `"${path}": ${(err as Error).message}`);
  }
}

/**
 * For a `trusted_root` that is no file: when it reads like a name rather than a path (no folder,
 * no `.json`), the built-in name it may have meant.
 */
export function notANameHint(value: string): string {
  return /[\\/]/.test(value) || value.endsWith('.json')
    ? ''
    : ` (no such file, and not a built-in trusted root: the one built-in name is ${PUBLIC_GOOD_TRUSTED_ROOT})`;
}

/**
 * The public-good trusted root, through TUF or, when that fails, from the newest copy at hand
 * (see the module comment). Throws `SignatureError` naming `sigstore-public-good` when there is
 * no usable copy at all.
 */
export async function loadPublicGoodTrustedRoot(options: TrustedRootOptions): Promise<ResolvedTrustedRoot> {
  const { loadTrustedRoot } = await import('./sigstore-verify.js');
  const { SignatureError } = await import('./oci-signature.js');
  const fail = (why: string) =>
    new SignatureError('bad_key', `trusted root ${PUBLIC_GOOD_TRUSTED_ROOT}: ${why}`);
  const mirror = tufUrl(options.env);
  if (typeof mirror !== 'string') throw fail(mirror.error);
  const cachePath = join(options.cacheDir, 'sigstore-tuf');
  let refreshError: string;
  try {
    const text = await fetchThroughTuf(cachePath, mirror);
    return { trust: loadTrustedRoot(text), source: `${PUBLIC_GOOD_TRUSTED_ROOT} (TUF repository ${mirror})` };
  } catch (err) {
    refreshError = describe(err);
  }
  const copy = await newestCopy(cachePath, mirror);
  if (copy === undefined)
    throw fail(
      `the TUF repository ${mirror} could not be read (${refreshError}), and neither the cache (${cachePath}) nor @sigstore/tuf's seeds hold a copy`,
    );
  try {
    return {
      trust: loadTrustedRoot(copy.text),
      source: `${PUBLIC_GOOD_TRUSTED_ROOT} (${copy.what})`,
      fallback: `the TUF repository ${mirror} could not be refreshed (${refreshError}), so the trusted root is ${copy.what}, which may lack certificate authorities or logs added since`,
    };
  } catch (err) {
    throw fail(`${copy.what}: ${(err as Error).message}`);
  }
}

/**
 * The keyless check against `root` for `identities`. When the root is a copy used because TUF
 * could not refresh it, a signature that does not verify says so: it may be one made with a
 * certificate authority or log the copy does not know yet.
 */
export async function trustedRootCheck(
  root: ResolvedTrustedRoot,
  identities: readonly IdentityPolicy[],
): Promise<KeylessCheck> {
  const { keylessCheck } = await import('./sigstore-verify.js');
  const check = keylessCheck(root.trust, identities);
  const fallback = root.fallback;
  if (fallback === undefined) return check;
  const noted = (outcome: KeylessResult): KeylessResult =>
    outcome.ok ? outcome : { ok: false, reason: `${outcome.reason} (${fallback})` };
  return {
    layer: (payload, signature, annotations) => noted(check.layer(payload, signature, annotations)),
    bundle: (json, digest) => noted(check.bundle(json, digest)),
  };
}

/** `SKEP_SIGSTORE_TUF_URL`, or the public repository; https, or http to loopback only. */
function tufUrl(env: NodeJS.ProcessEnv): string | { error: string } {
  const value = env[TUF_URL_ENV];
  if (value === undefined || value === '') return PUBLIC_TUF_URL;
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    return { error: `${TUF_URL_ENV}: not a URL: ${value}` };
  }
  const loopback = ['localhost', '127.0.0.1', '[::1]'].includes(parsed.hostname);
  if (parsed.protocol !== 'https:' && !(parsed.protocol === 'http:' && loopback))
    return { error: `${TUF_URL_ENV}: use https (or http to loopback): ${value}` };
  return value.replace(/\/+$/, '');
}

/** What `@sigstore/tuf` ships in `seeds.json`: per repository URL, its TUF `root.json` and some targets (base64). */
type Seeds = Record<string, { 'root.json': string; targets: Record<string, string> }>;

async function seedOfPublicRepository(): Promise<Seeds[string]> {
  const seeds = (await import('@sigstore/tuf/seeds.json', { with: { type: 'json' } })).default as Seeds;
  const seed = seeds[PUBLIC_TUF_URL];
  if (seed === undefined) throw new Error(`@sigstore/tuf ships no seed for ${PUBLIC_TUF_URL}`);
  return seed;
}

/**
 * The `trusted_root.json` target through TUF. A mirror is started from the public repository's
 * TUF root (`seeds.json` is keyed by URL), so what it serves is checked with the same keys.
 */
async function fetchThroughTuf(cachePath: string, mirror: string): Promise<string> {
  const tuf = await import('@sigstore/tuf');
  // A CommonJS package: in a bundle's split chunk its exports are the default export only.
  const { initTUF } =
    typeof tuf.initTUF === 'function' ? tuf : (tuf as unknown as { default: typeof tuf }).default;
  let rootPath: string | undefined;
  if (mirror !== PUBLIC_TUF_URL) {
    await mkdir(cachePath, { recursive: true });
    rootPath = join(cachePath, 'public-good-root.json');
    await writeFile(rootPath, Buffer.from((await seedOfPublicRepository())['root.json'], 'base64'));
  }
  const client = await initTUF({
    cachePath,
    mirrorURL: mirror,
    ...(rootPath === undefined ? {} : { rootPath }),
    forceCache: true,
    retry: false,
    timeout: FETCH_TIMEOUT_MS,
  });
  return client.getTarget(TARGET);
}

/**
 * The newest `trusted_root.json` at hand without the repository: the one in the TUF cache (a
 * target TUF verified, or the shipped copy `@sigstore/tuf` put there), else the shipped copy itself.
 */
async function newestCopy(
  cachePath: string,
  mirror: string,
): Promise<{ text: string; what: string } | undefined> {
  let seedText: string | undefined;
  try {
    seedText = Buffer.from((await seedOfPublicRepository()).targets[TARGET] ?? '', 'base64').toString('utf8');
  } catch {
    seedText = undefined;
  }
  const shipped = "the copy shipped with Skep in @sigstore/tuf's seeds";
  // @sigstore/tuf keeps each repository's cache in a folder named after its host and path.
  const url = new URL(mirror);
  const cached = join(
    cachePath,
    encodeURIComponent(url.host + url.pathname.replace(/\/$/, '')),
    'targets',
    TARGET,
  );
  try {
    const text = await readFile(cached, 'utf8');
    if (text === seedText) return { text, what: shipped };
    const written = (await stat(cached)).mtime.toISOString();
    return { text, what: `the copy fetched through TUF into ${cached} (${written})` };
  } catch {
    // No cached target: the shipped copy, if the package has one.
  }
  return seedText === undefined || seedText === '' ? undefined : { text: seedText, what: shipped };
}

/** A TUF or download error in one line (tuf-js's HTTP errors carry the status apart). */
function describe(err: unknown): string {
  const status = (err as { statusCode?: unknown }).statusCode;
  const message = `${err instanceof Error ? err.message : String(err)}${typeof status === 'number' ? ` (HTTP ${status})` : ''}`;
  const cause = (err as { cause?: unknown }).cause;
  return cause instanceof Error && cause.message !== '' && cause.message !== message
    ? `${message}: ${describe(cause)}`
    : message;
}
