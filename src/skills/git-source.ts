/**
 * Skills from git: `git://<host>/<owner>/<repo>[/more][@<ref>][#<path>]` (skills reference
 * §1.4). The system `git` fetches exactly one commit (shallow) into a temp dir; the digest is
 * the commit hash and the skill is the folder at `<path>`. Loopback and private IP literals
 * are refused (SSRF) unless dev mode allows them. Tokens travel in environment-provided git
 * config, never on the command line.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { isIP } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SkepError } from '../shared/index.js';

export interface GitRef {
  host: string;
  repoPath: string;
  ref: string | undefined;
  refKind: 'commit' | 'tag' | 'branch' | 'default';
  path: string;
}

export interface GitOptions {
  /** Accept loopback and private hosts (tests, local development). */
  allowPrivateHosts: boolean;
  /** How the repository is cloned: https (default), http, or the git protocol (`git daemon`). */
  scheme: 'https' | 'http' | 'git';
  timeoutMs: number;
}

/** Options from the environment: `SKEP_DEV=true` allows private hosts; `SKEP_GIT_SCHEME` picks the protocol. */
export function gitOptionsFromEnv(env: NodeJS.ProcessEnv): GitOptions {
  const dev = env['SKEP_DEV'] === 'true';
  const scheme = env['SKEP_GIT_SCHEME'];
  return {
    allowPrivateHosts: dev,
    scheme: scheme === 'http' || scheme === 'git' ? scheme : dev ? 'http' : 'https',
    timeoutMs: 2 * 60_000,
  };
}

const REF_CHARS = /^[A-Za-z0-9._/-]+$/;
const TAG_LIKE = /^v\d+\.\d+(\.\d+)*(-[A-Za-z0-9._-]+)?$/;

function isPrivateHost(host: string): boolean {
  const name = host
    .replace(/:\d+$/, '')
    .replace(/^\[|\]$/g, '')
    .toLowerCase();
  if (name === 'localhost' || name.endsWith('.localhost')) return true;
  const kind = isIP(name);
  if (kind === 4) {
    const [a = 0, b = 0] = name.split('.').map(Number);
    return (
      a === 127 ||
      a === 10 ||
      a === 0 ||
      (a === 172 && b >= 16 && b <= 31) ||
      (a === 192 && b === 168) ||
      (a === 169 && b === 254)
    );
  }
  if (kind === 6) return name === '::1' || name === '::' || /^f[cd]/.test(name) || name.startsWith('fe80');
  return false;
}

export function isGitRef(value: string): boolean {
  return value.startsWith('git://');
}

/** Parses a `git://` reference; every problem is a 400. */
export function parseGitRef(input: string, options: Pick<GitOptions, 'allowPrivateHosts'>): GitRef {
  const bad = (why: string) => new SkepError('bad_request', `invalid git reference "${input}": ${why}`);
  if (!isGitRef(input)) throw bad('must start with git://');
  let rest = input.slice('git://'.length);
  let path = '';
  const hash = rest.indexOf('#');
  if (hash !== -1) {
    path = rest.slice(hash + 1);
    rest = rest.slice(0, hash);
  }
  let ref: string | undefined;
  const at = rest.indexOf('@');
  if (at !== -1) {
    ref = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (ref === '' || !REF_CHARS.test(ref) || ref.includes('..'))
      throw bad('the ref may only use letters, digits, ".", "_", "/", "-" and no ".."');
  }
  const slash = rest.indexOf('/');
  if (slash <= 0) throw bad('expected git://host/owner/repo');
  const host = rest.slice(0, slash);
  const repoPath = rest.slice(slash + 1).replace(/\/+$/, '');
  if (!/^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:]+\](:\d{1,5})?$/.test(host))
    throw bad(`"${host}" is not a valid host`);
  const segments = repoPath.split('/');
  if (
    segments.length < 2 ||
    segments.some((s) => s === '' || s === '.' || s === '..' || !/^[A-Za-z0-9._-]+$/.test(s))
  ) {
    throw bad('the repository path needs at least owner/repo, with plain segments');
  }
  if (!options.allowPrivateHosts && isPrivateHost(host))
    throw bad(`host "${host}" is a loopback or private address`);
  if (path !== '') {
    if (
      path.includes('\\') ||
      path.includes('\0') ||
      path.startsWith('/') ||
      path.split('/').includes('..')
    ) {
      throw bad('the path must be relative, without "..", backslashes or NUL');
    }
    path = path
      .split('/')
      .filter((p) => p !== '' && p !== '.')
      .join('/');
  }
  const refKind =
    ref === undefined
      ? 'default'
      : /^[0-9a-f]{40}$/.test(ref)
        ? 'commit'
        : TAG_LIKE.test(ref)
          ? 'tag'
          : 'branch';
  return { host, repoPath, ref, refKind, path };
}

function cloneUrl(ref: GitRef, scheme: GitOptions['scheme']): string {
  return `${scheme}://${ref.host}/${ref.repoPath}`;
}

/** Git auth as env-provided config (`GIT_CONFIG_*`), so no secret appears in the process list. */
function gitEnv(ref: GitRef, scheme: GitOptions['scheme'], env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {
    PATH: env['PATH'],
    HOME: env['HOME'],
    GIT_TERMINAL_PROMPT: '0',
    GIT_ALLOW_PROTOCOL: scheme,
    GIT_CONFIG_NOSYSTEM: '1',
    LANG: 'C',
  };
  const host = ref.host.replace(/:\d+$/, '').toLowerCase();
  const token =
    (host === 'github.com' ? env['GITHUB_TOKEN'] : undefined) ??
    (host === 'gitlab.com' ? env['GITLAB_TOKEN'] : undefined) ??
    env['GIT_TOKEN'];
  if (token !== undefined && token !== '' && scheme !== 'git') {
    out['GIT_CONFIG_COUNT'] = '1';
    out['GIT_CONFIG_KEY_0'] = 'http.extraHeader';
    out['GIT_CONFIG_VALUE_0'] =
      `Authorization: Basic ${Buffer.from(`x-access-token:${token}`).toString('base64')}`;
  }
  return out;
}

function run(args: string[], cwd: string, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<string> {
  return new Promise((res, rej) => {
    execFile(
      'git',
      args,
      { cwd, env, timeout: timeoutMs, maxBuffer: 4 * 1024 * 1024 },
      (err, stdout, stderr) => {
        if (err) {
          const why = (err as { killed?: boolean }).killed
            ? 'timed out'
            : stderr.trim().split('\n').slice(-1)[0] || err.message;
          rej(new Error(why));
        } else res(stdout.trim());
      },
    );
  });
}

export interface GitCheckout {
  /** The commit hash (the digest of a git skill). */
  commit: string;
  /** Directory holding the skill (`<checkout>/<path>`). */
  dir: string;
  /** Removes the checkout. */
  dispose(): Promise<void>;
}

/** Fetches one commit of the repository into a temp dir. Failures are 502 (`resolving git skill: …`). */
export async function checkoutGitSkill(
  ref: GitRef,
  options: GitOptions,
  env: NodeJS.ProcessEnv = process.env,
): Promise<GitCheckout> {
  const work = await mkdtemp(join(tmpdir(), 'skep-git-'));
  const genv = gitEnv(ref, options.scheme, env);
  const url = cloneUrl(ref, options.scheme);
  const git = (args: string[]) => run(args, work, genv, options.timeoutMs);
  try {
    await git(['init', '-q']);
    await git(['remote', 'add', 'origin', url]);
    const wanted =
      ref.refKind === 'commit'
        ? ref.ref!
        : ref.refKind === 'tag'
          ? `refs/tags/${ref.ref}`
          : ref.refKind === 'branch'
            ? `refs/heads/${ref.ref}`
            : 'HEAD';
    try {
      await git(['fetch', '-q', '--depth', '1', 'origin', wanted]);
    } catch (err) {
      // A tag-like name may be a branch, and a server may refuse a bare commit in a shallow fetch.
      if (ref.refKind === 'tag')
        await git(['fetch', '-q', '--depth', '1', 'origin', `refs/heads/${ref.ref}`]);
      else if (ref.refKind === 'commit')
        await git([
          'fetch',
          '-q',
          'origin',
          '+refs/heads/*:refs/remotes/origin/*',
          '+refs/tags/*:refs/tags/*',
        ]);
      else throw err;
    }
    const target = ref.refKind === 'commit' ? ref.ref! : 'FETCH_HEAD';
    const commit = await git(['rev-parse', '--verify', `${target}^{commit}`]);
    await git(['-c', 'advice.detachedHead=false', 'checkout', '-q', '--detach', commit]);
    return {
      commit,
      dir: ref.path === '' ? work : join(work, ...ref.path.split('/')),
      dispose: () => rm(work, { recursive: true, force: true }),
    };
  } catch (err) {
    await rm(work, { recursive: true, force: true });
    const message = (err as Error).message;
    if (/timed out/.test(message))
      throw new SkepError('gateway_timeout', `resolving git skill: ${url}: ${message}`);
    throw new SkepError('bad_gateway', `resolving git skill: ${url}: ${message}`, { cause: err });
  }
}
