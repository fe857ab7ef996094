/**
 * Shared helpers for the proxy integration tests: real child processes (spawned with this
 * Node binary from node_modules, no network) and a proxy on 127.0.0.1 port 0.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type ProxyOptions, type RunningProxy, startProxy } from '../../../src/proxy/index.js';

const require = createRequire(import.meta.url);
const here = dirname(fileURLToPath(import.meta.url));

export const EVERYTHING_ENTRY = join(
  dirname(require.resolve('@modelcontextprotocol/server-everything/package.json')),
  'dist/index.js',
);
export const FIXTURE_SERVER = join(here, '../../fixtures/mcp/conformance-server.ts');

/** Spawns a stdio MCP server; the test kills it (SIGKILL) when it ends. */
export function spawnServer(t: TestContext, args: string[]): ChildProcessWithoutNullStreams {
  const child = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  child.stderr.resume();
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return child;
}

export function spawnEverything(t: TestContext): ChildProcessWithoutNullStreams {
  return spawnServer(t, [EVERYTHING_ENTRY, 'stdio']);
}

export function spawnFixture(t: TestContext): ChildProcessWithoutNullStreams {
  return spawnServer(t, ['--import', 'tsx', FIXTURE_SERVER]);
}

export async function proxyFor(
  t: TestContext,
  child: ChildProcessWithoutNullStreams | undefined,
  options: Partial<ProxyOptions> = {},
): Promise<RunningProxy> {
  const proxy = await startProxy({
    port: 0,
    ...(child === undefined ? {} : { upstream: { kind: 'stdio', stdin: child.stdin, stdout: child.stdout } }),
    limits: { upstreamInitTimeoutMs: 60_000 },
    ...options,
  });
  t.after(() => proxy.close());
  return proxy;
}

export function exited(child: ChildProcessWithoutNullStreams): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

export async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** Resolves when the child prints `pattern` on stdout or stderr. */
export function printed(child: ChildProcessWithoutNullStreams, pattern: RegExp): Promise<void> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const on = (c: Buffer): void => {
      seen += c.toString();
      if (pattern.test(seen)) resolve();
    };
    child.stdout.on('data', on);
    child.stderr.on('data', on);
    child.once('exit', (code) => reject(new Error(`server exited (${code}): ${seen.slice(-500)}`)));
  });
}
