/**
 * Shared helpers for the proxy integration tests: real child processes (spawned with this
 * Node binary from node_modules, no network) and a proxy on 127.0.0.1 port 0.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type ProxyOptions, type RunningProxy, startProxy } from '../../../src/dataplane/proxy/index.js';
import { createLineLogger, type Logger } from '../../../src/shared/index.js';

const require = createRequire(import.meta.url);
const here = dirname(fileURLToPath(import.meta.url));

export const EVERYTHING_ENTRY = join(
  dirname(require.resolve('@modelcontextprotocol/server-everything/package.json')),
  'dist/index.js',
);
export const FIXTURE_SERVER = join(here, '../../fixtures/mcp/conformance-server.ts');
export const RECORDING_SERVER = join(here, '../../fixtures/mcp/recording-server.ts');

/** Spawns a stdio MCP server; the test kills it (SIGKILL) when it ends. */
export function spawnServer(
  t: TestContext,
  args: string[],
  env?: Record<string, string>,
): ChildProcessWithoutNullStreams {
  const child = spawn(process.execPath, args, {
    stdio: ['pipe', 'pipe', 'pipe'],
    ...(env === undefined ? {} : { env: { ...process.env, ...env } }),
  });
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

/**
 * A debug logger for a proxy, and a promise that resolves when the proxy logs a line containing
 * `text`: a test waits for what the proxy did (gave up on a call, a stream), not for a clock.
 */
export function loggedLine(text: string): { logger: Logger; logged: Promise<void> } {
  let seen!: () => void;
  const logged = new Promise<void>((resolve) => (seen = resolve));
  const logger = createLineLogger({
    level: 'debug',
    write: (line) => {
      if (line.includes(text)) seen();
    },
  });
  return { logger, logged };
}

export function exited(child: ChildProcessWithoutNullStreams): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
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

/**
 * The recording stdio server (`write_file` appends to a file) and the file it writes; the
 * test reads `calls()` to learn whether a tool call reached the server.
 */
export function spawnRecorder(t: TestContext): {
  child: ChildProcessWithoutNullStreams;
  calls: () => string[];
} {
  const dir = mkdtempSync(join(tmpdir(), 'skep-record-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'calls.txt');
  const child = spawnServer(t, ['--import', 'tsx', RECORDING_SERVER], { RECORD_FILE: file });
  const calls = (): string[] => {
    if (!existsSync(file)) return [];
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => line !== '');
  };
  return { child, calls };
}

/** A request an HTTP upstream received. */
export interface ReceivedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * A plain HTTP server on 127.0.0.1 port 0 standing in for a remote MCP server: it records
 * every request it receives (so a test can show a request never reached it) and answers with
 * `respond`. Closed when the test ends.
 */
export async function startHttpUpstream(
  t: TestContext,
  respond: (req: ReceivedRequest, res: ServerResponse) => void,
): Promise<{ url: string; received: ReceivedRequest[] }> {
  const received: ReceivedRequest[] = [];
  const server = createHttpServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => {
      body += c;
    });
    req.on('end', () => {
      const got = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body };
      received.push(got);
      respond(got, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received };
}

/** A 2026-07-28 stateless `tools/call` of the recording server's tool: no session needed. */
export function statelessWriteFile(text: string): string {
  return JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: {
      name: 'write_file',
      arguments: { text },
      _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' },
    },
  });
}
