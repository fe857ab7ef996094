/**
 * Real services for the skills tests: Debian's `docker-registry` (distribution 2.8) and
 * `git daemon`, each on a free loopback port in a temp dir, stopped when the test ends.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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

/** Starts a registry with filesystem storage; returns its `host:port`. */
export async function startRegistry(t: TestContext): Promise<string> {
  const dir = tempDir(t, 'skep-registry-');
  const port = await freePort();
  const config = join(dir, 'config.yml');
  writeFileSync(
    config,
    `version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: ${join(dir, 'data')}\nhttp:\n  addr: 127.0.0.1:${port}\n`,
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
