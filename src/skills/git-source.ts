/**
 * Skills from git: `git://<host>/<owner>/<repo>[/more][@<ref>][#<path>]` (ToolHive's
 * syntax). The system `git` fetches exactly one commit (shallow) into a temp dir; the digest is
 * the commit hash and the skill is the folder at `<path>`. Tokens travel in
 * environment-provided git config, never on the command line.
 *
 * Address policy (`src/shared/net`): before git runs, the host is resolved and every address
 * checked — public only, unless the user listed the host as a private skill host
 * (`private-hosts.ts`); link-local and metadata addresses never. git then connects to the
 * checked address and nothing else: over http(s) through curl's resolve table
 * (`http.curloptResolve`, git ≥ 2.37) with redirects off (`http.followRedirects=false`: a
 * redirect would go to a host nobody checked); over the git protocol the URL names the
 * checked address itself (the protocol has no TLS name to keep). ssh is never used:
 * `GIT_ALLOW_PROTOCOL` admits only the one scheme chosen (`SKEP_GIT_SCHEME`, default https).
 *
 * Credentials go only where they are meant: a reference names any host, so `GITHUB_TOKEN`
 * goes only to github.com, `GITLAB_TOKEN` only to gitlab.com, and the generic `GIT_TOKEN`
 * only to the hosts listed in `SKEP_GIT_TOKEN_HOSTS` (`host` for any port, or `host:port`) —
 * to none when the list is empty (whose token it is, Skep cannot know).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  canonicalHost,
  findOutboundRefusal,
  isIpLiteral,
  OutboundClient,
  parseHostEntry,
  parseHostList,
  type Resolver,
  SkepError,
} from '../shared/index.js';
import { PRIVATE_HOSTS_HINT, privateSkillHosts } from './private-hosts.js';

export interface GitRef {
  host: string;
  repoPath: string;
  ref: string | undefined;
  refKind: 'commit' | 'tag' | 'branch' | 'default';
  path: string;
}

export interface GitOptions {
  /** Hosts (`host`, `host:port`) that may be loopback or private: the user's own git servers. */
  privateHosts: readonly string[];
  /** How the repository is cloned: https (default), http, or the git protocol (`git daemon`). */
  scheme: 'https' | 'http' | 'git';
  timeoutMs: number;
  /** Name resolution for the address check (tests inject one); default the system resolver. */
  resolve?: Resolver;
}

/**
 * Options from the environment: `SKEP_GIT_SCHEME` picks the protocol (`SKEP_DEV=true` makes
 * http the default); private hosts come from `SKEP_SKILLS_PRIVATE_HOSTS`. (`SKEP_DEV` no
 * longer allows private hosts: that is an explicit list now.)
 */
export function gitOptionsFromEnv(env: NodeJS.ProcessEnv, configured: readonly string[] = []): GitOptions {
  const dev = env['SKEP_DEV'] === 'true';
  const scheme = env['SKEP_GIT_SCHEME'];
  return {
    privateHosts: privateSkillHosts(configured, env),
    scheme: scheme === 'http' || scheme === 'git' ? scheme : dev ? 'http' : 'https',
    timeoutMs: 2 * 60_000,
  };
}

const REF_CHARS = /^[A-Za-z0-9._/-]+$/;
const TAG_LIKE = /^v\d+\.\d+(\.\d+)*(-[A-Za-z0-9._-]+)?$/;

export function isGitRef(value: string): boolean {
  return value.startsWith('git://');
}

/** Parses a `git://` reference; every problem is a 400. */
export function parseGitRef(input: string): GitRef {
  const bad = (why: string) => new SkepError('invalid_reference', `invalid git reference "${input}": ${why}`);
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

const DEFAULT_PORT: Record<GitOptions['scheme'], number> = { https: 443, http: 80, git: 9418 };

/** `[v6]` for an IPv6 address in a URL or a curl resolve entry; other addresses as they are. */
function bracket(address: string): string {
  return address.includes(':') ? `[${address}]` : address;
}

interface PinnedRemote {
  /** What git is told to fetch. */
  url: string;
  /** What messages show (the reference's host, not the address). */
  display: string;
  /** git config entries that hold git to the checked addresses. */
  config: [key: string, value: string][];
}

/**
 * Resolves and checks the host, then builds the remote so git connects only to what was
 * checked. Refusals are 403 `forbidden` naming the opt-in; a name that does not resolve is 502.
 */
async function pinRemote(ref: GitRef, options: GitOptions): Promise<PinnedRemote> {
  const port = /:(\d+)$/.exec(ref.host)?.[1];
  const portNumber = port === undefined ? DEFAULT_PORT[options.scheme] : Number(port);
  let host: string;
  try {
    host = canonicalHost(ref.host);
  } catch {
    throw new SkepError('invalid_reference', `invalid git host "${ref.host}"`);
  }
  const display = `${options.scheme}://${ref.host}/${ref.repoPath}`;
  let addresses: string[];
  try {
    addresses = await new OutboundClient(options.resolve ? { resolve: options.resolve } : {}).addressesFor(
      host,
      portNumber,
      { privateHosts: options.privateHosts, hint: PRIVATE_HOSTS_HINT },
    );
  } catch (err) {
    const refusal = findOutboundRefusal(err);
    if (refusal !== undefined)
      throw new SkepError('forbidden', `git skill host ${ref.host}: ${refusal.message}`, { cause: err });
    throw new SkepError('bad_gateway', `resolving git skill: ${display}: cannot resolve ${host}`, {
      cause: err,
    });
  }
  const authority = `${bracket(host)}${port === undefined ? '' : `:${port}`}`;
  if (options.scheme === 'git') {
    return { url: `git://${bracket(addresses[0]!)}:${portNumber}/${ref.repoPath}`, display, config: [] };
  }
  const config: PinnedRemote['config'] = [['http.followRedirects', 'false']];
  if (!isIpLiteral(host))
    config.push(['http.curloptResolve', `${host}:${portNumber}:${addresses.map(bracket).join(',')}`]);
  return { url: `${options.scheme}://${authority}/${ref.repoPath}`, display, config };
}

/** The hosts `GIT_TOKEN` may be sent to. */
export const GIT_TOKEN_HOSTS_ENV = 'SKEP_GIT_TOKEN_HOSTS';

/** True when `GIT_TOKEN_HOSTS_ENV` names this host (and port). A bad entry is a 400 naming the variable. */
function listedForToken(host: string, port: number, env: NodeJS.ProcessEnv): boolean {
  let listed: string[];
  try {
    listed = parseHostList(env[GIT_TOKEN_HOSTS_ENV]);
  } catch (err) {
    throw new SkepError('invalid_config', `${GIT_TOKEN_HOSTS_ENV}: ${(err as Error).message}`);
  }
  return listed.some((entry) => {
    const e = parseHostEntry(entry);
    return e.host === host && (e.port === undefined || e.port === port);
  });
}

/** The token for this reference's host, if the user meant one for it (see the module comment). */
function tokenFor(ref: GitRef, scheme: GitOptions['scheme'], env: NodeJS.ProcessEnv): string | undefined {
  const { host, port = DEFAULT_PORT[scheme] } = parseHostEntry(ref.host);
  const set = (name: string): string | undefined => (env[name] === '' ? undefined : env[name]);
  const specific =
    host === 'github.com' ? set('GITHUB_TOKEN') : host === 'gitlab.com' ? set('GITLAB_TOKEN') : undefined;
  if (specific !== undefined) return specific;
  const generic = set('GIT_TOKEN');
  return generic !== undefined && listedForToken(host, port, env) ? generic : undefined;
}

/** Git's environment: built from nothing, with config (`GIT_CONFIG_*`) so no secret appears in the process list. */
function gitEnv(
  token: string | undefined,
  scheme: GitOptions['scheme'],
  config: PinnedRemote['config'],
  env: NodeJS.ProcessEnv,
): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {
    PATH: env['PATH'],
    HOME: env['HOME'],
    GIT_TERMINAL_PROMPT: '0',
    GIT_ALLOW_PROTOCOL: scheme,
    GIT_CONFIG_NOSYSTEM: '1',
    LANG: 'C',
  };
  const entries = [...config];
  // The git protocol has no authentication: a token would travel for nothing.
  if (token !== undefined && scheme !== 'git') {
    entries.push([
      'http.extraHeader',
      `Authorization: Basic ${Buffer.from(`x-access-token:${token}`).toString('base64')}`,
    ]);
  }
  if (entries.length > 0) {
    out['GIT_CONFIG_COUNT'] = String(entries.length);
    entries.forEach(([key, value], i) => {
      out[`GIT_CONFIG_KEY_${i}`] = key;
      out[`GIT_CONFIG_VALUE_${i}`] = value;
    });
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

/**
 * Fetches one commit of the repository into a temp dir, from the checked address only.
 * A refused host is 403; other failures are 502 (`resolving git skill: …`).
 */
export async function checkoutGitSkill(
  ref: GitRef,
  options: GitOptions,
  env: NodeJS.ProcessEnv = process.env,
): Promise<GitCheckout> {
  const remote = await pinRemote(ref, options);
  const token = tokenFor(ref, options.scheme, env);
  // GIT_TOKEN is set but not for this host: a failure below may be the missing login.
  const withheld =
    token === undefined && options.scheme !== 'git' && (env['GIT_TOKEN'] ?? '') !== ''
      ? ` (GIT_TOKEN was not sent: ${ref.host} is not in ${GIT_TOKEN_HOSTS_ENV})`
      : '';
  const work = await mkdtemp(join(tmpdir(), 'skep-git-'));
  const genv = gitEnv(token, options.scheme, remote.config, env);
  const url = remote.display;
  const git = (args: string[]) => run(args, work, genv, options.timeoutMs);
  try {
    await git(['init', '-q']);
    await git(['remote', 'add', 'origin', remote.url]);
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
    throw new SkepError('bad_gateway', `resolving git skill: ${url}: ${message}${withheld}`, { cause: err });
  }
}
