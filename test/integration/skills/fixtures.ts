/**
 * Real services for the skills tests: Debian's `docker-registry` (distribution 2.8),
 * `git daemon`, and git's smart HTTP (`git http-backend` behind a Node server), each on a
 * free loopback port in a temp dir, stopped when the test ends.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { TestContext } from 'node:test';
import { freePort } from '../../helpers/net.js';
import { waitFor } from '../../helpers/wait.js';

export const REGISTRY_BIN = '/usr/bin/docker-registry';

export function tempDir(t: TestContext, prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const READY_TIMEOUT_MS = 30_000;

function stopOnExit(t: TestContext, child: ChildProcess): void {
  t.after(async () => {
    if (child.exitCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  });
}

/**
 * Starts a registry with filesystem storage; returns its `host:port`. Deleting manifests is
 * enabled, so that a test can remove a signature (`removeSignature`).
 */
export async function startRegistry(t: TestContext): Promise<string> {
  const dir = tempDir(t, 'skep-registry-');
  const port = await freePort();
  const config = join(dir, 'config.yml');
  writeFileSync(
    config,
    `version: 0.1\nlog:\n  level: error\nstorage:\n  delete:\n    enabled: true\n  filesystem:\n    rootdirectory: ${join(dir, 'data')}\nhttp:\n  addr: 127.0.0.1:${port}\n`,
  );
  const child = spawn(REGISTRY_BIN, ['serve', config], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  stopOnExit(t, child);
  await waitFor(
    'docker-registry',
    async () => (await fetch(`http://127.0.0.1:${port}/v2/`)).status === 200,
    READY_TIMEOUT_MS,
  ).catch((err: unknown) => {
    throw new Error(`${String(err)} (its stderr: ${stderr})`);
  });
  return `127.0.0.1:${port}`;
}

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: 'Test',
      GIT_AUTHOR_EMAIL: 't@example.test',
      GIT_COMMITTER_NAME: 'Test',
      GIT_COMMITTER_EMAIL: 't@example.test',
    },
  }).trim();
}

export interface GitServer {
  /** `host:port` of the daemon. */
  host: string;
  /** Work tree of the served repository `owner/repo`. */
  repo: string;
  commit(message: string): string;
  tag(name: string): void;
}

/** Serves `<base>/owner/repo` with `git daemon` on loopback. */
export async function startGitDaemon(t: TestContext): Promise<GitServer> {
  const base = tempDir(t, 'skep-git-daemon-');
  const repo = join(base, 'owner', 'repo');
  mkdirSync(repo, { recursive: true });
  git(repo, 'init', '-q', '-b', 'main');
  const port = await freePort();
  const child = spawn(
    'git',
    [
      'daemon',
      '--reuseaddr',
      '--export-all',
      '--listen=127.0.0.1',
      `--port=${port}`,
      `--base-path=${base}`,
      base,
    ],
    { stdio: 'ignore' },
  );
  stopOnExit(t, child);
  const server: GitServer = {
    host: `127.0.0.1:${port}`,
    repo,
    commit(message) {
      git(repo, 'add', '-A');
      git(repo, 'commit', '-q', '-m', message);
      return git(repo, 'rev-parse', 'HEAD');
    },
    tag(name) {
      git(repo, 'tag', '-a', name, '-m', name);
    },
  };
  writeFileSync(join(repo, 'README.md'), 'test repo\n');
  server.commit('init');
  // A failed ls-remote throws; waitFor retries until the deadline and reports the last error.
  await waitFor(
    'git daemon',
    () => {
      execFileSync('git', ['ls-remote', `git://${server.host}/owner/repo`], {
        stdio: 'ignore',
        timeout: 5000,
      });
      return true;
    },
    READY_TIMEOUT_MS,
  );
  return server;
}

/** Writes a skill folder `<parent>/<name>` with SKILL.md and extra files. */
export function writeSkill(
  parent: string,
  name: string,
  options: {
    version?: string;
    description?: string;
    requires?: string[];
    files?: Record<string, string>;
    extra?: string;
  } = {},
): string {
  const dir = join(parent, name);
  mkdirSync(dir, { recursive: true });
  const lines = [
    '---',
    `name: ${name}`,
    `description: ${options.description ?? `The ${name} skill.`}`,
    `version: ${options.version ?? '1.0.0'}`,
    'license: Apache-2.0',
  ];
  if (options.requires !== undefined) {
    lines.push('toolhive.requires:');
    for (const r of options.requires) lines.push(`  - ${r}`);
  }
  if (options.extra !== undefined) lines.push(options.extra);
  lines.push('---', `# ${name}`, '', 'Use this skill well.', '');
  writeFileSync(join(dir, 'SKILL.md'), lines.join('\n'));
  for (const [path, content] of Object.entries(options.files ?? {})) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
  return dir;
}

export function hasRegistry(): boolean {
  return existsSync(REGISTRY_BIN);
}

export function initGitRepo(dir: string): void {
  mkdirSync(dir, { recursive: true });
  git(dir, 'init', '-q');
}

export interface GitHttpServer {
  port: number;
  /** TCP connections accepted so far. */
  connections(): number;
  /** The `Authorization` header of every request, in order (undefined when absent). */
  authorizations: (string | undefined)[];
}

/** Smart HTTP for the repositories under `root`, through `git http-backend` (CGI). */
export async function startGitHttp(t: TestContext, root: string): Promise<GitHttpServer> {
  let count = 0;
  const authorizations: (string | undefined)[] = [];
  const server = createHttpServer((req, res) => {
    authorizations.push(req.headers.authorization);
    const url = new URL(req.url ?? '/', 'http://localhost');
    const child = spawn('git', ['http-backend'], {
      env: {
        PATH: process.env['PATH'],
        GIT_PROJECT_ROOT: root,
        GIT_HTTP_EXPORT_ALL: '1',
        PATH_INFO: url.pathname,
        QUERY_STRING: url.search.slice(1),
        REQUEST_METHOD: req.method ?? 'GET',
        CONTENT_TYPE: req.headers['content-type'] ?? '',
        HTTP_CONTENT_ENCODING: req.headers['content-encoding'] ?? '',
        GIT_PROTOCOL: String(req.headers['git-protocol'] ?? ''),
        REMOTE_ADDR: '127.0.0.1',
      },
    });
    req.pipe(child.stdin);
    let head = Buffer.alloc(0);
    let started = false;
    child.stdout.on('data', (chunk: Buffer) => {
      if (started) {
        res.write(chunk);
        return;
      }
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end === -1) return;
      const headers: Record<string, string> = {};
      let status = 200;
      for (const line of head.subarray(0, end).toString('latin1').split('\r\n')) {
        const colon = line.indexOf(':');
        const name = line.slice(0, colon).trim().toLowerCase();
        const value = line.slice(colon + 1).trim();
        if (name === 'status') status = Number.parseInt(value, 10);
        else headers[name] = value;
      }
      res.writeHead(status, headers);
      res.write(head.subarray(end + 4));
      started = true;
    });
    child.stdout.on('end', () => res.end());
  });
  server.on('connection', () => count++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { port: (server.address() as AddressInfo).port, connections: () => count, authorizations };
}
