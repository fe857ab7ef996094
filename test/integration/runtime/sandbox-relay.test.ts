/**
 * The relay inside a sandbox with its own network namespace (`forwarder.ts`),
 * both programs — the Perl script (the default when perl is on PATH) and the Node fallback —
 * each run by a real bubblewrap in a network namespace of its own, with a unix socket folder
 * bound at `/run/skep` as the runtime does: outbound TCP inside → a unix socket outside,
 * inbound unix socket → TCP inside, half-close and large transfers, the server's exit status
 * and stop signal, and the errors. Needs bubblewrap: skipped loudly without it, a failure in CI.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { probeBwrap } from '../../../src/dataplane/runtime/index.js';
import { sandboxedPid } from '../../../src/dataplane/runtime/sandbox/bwrap-sandbox.js';
import {
  type RelayPlan,
  type RelayProgram,
  relayLaunch,
  relayProgram,
  SANDBOX_SOCKET_DIR,
} from '../../../src/dataplane/runtime/sandbox/forwarder.js';
import { requireService } from '../../helpers/services.js';

const MIB = 1 << 20;

function requireBwrap(t: TestContext): boolean {
  const probe = probeBwrap('bwrap');
  return requireService(t, 'bubblewrap', probe.ok, probe.ok ? '' : `${probe.reason}; apt install bubblewrap`);
}

const perl = relayProgram(process.env);
const programs: { name: string; program: RelayProgram; present: boolean }[] = [
  { name: 'perl', program: perl, present: perl.kind === 'perl' },
  { name: 'node', program: { kind: 'node' }, present: true },
];

interface Sandbox {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Runs `command args` in a bwrap with its own network namespace, `socketDir` at `/run/skep`. */
function sandboxed(
  t: TestContext,
  socketDir: string,
  launch: { command: string; args: string[]; env: Record<string, string> },
): Sandbox {
  const child = spawn(
    'bwrap',
    [
      ...['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/run'],
      ...['--bind', socketDir, SANDBOX_SOCKET_DIR, '--unshare-all', '--die-with-parent'],
      ...['--', launch.command, ...launch.args],
    ],
    { env: { ...process.env, ...launch.env }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
  child.stderr.setEncoding('utf8').on('data', (s: string) => (err += s));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  t.after(() => {
    child.kill('SIGKILL');
  });
  return { child, stdout: () => out, stderr: () => err, exited };
}

/** Runs `node -e script` behind the relay of `plan`, sandboxed. */
function runRelayed(
  t: TestContext,
  program: RelayProgram,
  socketDir: string,
  plan: RelayPlan,
  script: string,
): Sandbox {
  return sandboxed(t, socketDir, relayLaunch(program, plan, process.execPath, ['-e', script]));
}

function listenUnix(server: Server, path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, resolve);
  });
}

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'skep-relay-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** 1 MiB that is not all one byte, so a dropped or reordered chunk changes the hash. */
const CLIENT_DATA_SCRIPT = `const data = Buffer.alloc(${MIB}); for (let i = 0; i < data.length; i++) data[i] = (i * 31 + (i >> 9)) & 255;`;
const clientData = (() => {
  const data = Buffer.alloc(MIB);
  for (let i = 0; i < data.length; i++) data[i] = (i * 31 + (i >> 9)) & 255;
  return data;
})();

for (const { name, program, present } of programs) {
  test(`${name} relay: 127.0.0.1:3128 inside reaches the unix socket outside; 1 MiB each way, half-close kept; the server's exit status is the sandbox's`, async (t) => {
    if (!requireBwrap(t)) return;
    if (!requireService(t, 'perl', present, 'perl is not on PATH (Debian: perl-base)')) return;
    const dir = tempDir(t);
    // Outside: reads everything until the client half-closes, then answers the hash of what
    // came and 1 MiB of its own, and ends.
    const upstream = createServer({ allowHalfOpen: true }, (socket) => {
      const hash = createHash('sha256');
      socket.on('data', (chunk: Buffer) => hash.update(chunk));
      socket.on('end', () => {
        socket.write(hash.digest('hex'));
        socket.end(Buffer.alloc(MIB, 'y'));
      });
    });
    await listenUnix(upstream, join(dir, 'egress.sock'));
    t.after(() => upstream.close());
    const client = `${CLIENT_DATA_SCRIPT}
      const socket = require('node:net').connect(3128, '127.0.0.1', () => socket.end(data));
      const chunks = [];
      socket.on('data', (c) => chunks.push(c));
      socket.on('end', () => {
        const all = Buffer.concat(chunks);
        process.stdout.write(JSON.stringify({ hash: all.subarray(0, 64).toString(), rest: all.length - 64, ys: all.subarray(64).every((b) => b === 121) }));
        process.exitCode = 3;
      });`;
    const sandbox = runRelayed(
      t,
      program,
      dir,
      { egress: { port: 3128, socket: `${SANDBOX_SOCKET_DIR}/egress.sock` } },
      client,
    );
    assert.deepEqual(await sandbox.exited, { code: 3, signal: null }, sandbox.stderr());
    assert.deepEqual(JSON.parse(sandbox.stdout()), {
      hash: createHash('sha256').update(clientData).digest('hex'),
      rest: MIB,
      ys: true,
    });
  });

  test(`${name} relay: the inbound unix socket reaches a server listening inside, and SIGTERM to the sandboxed process reaches the server`, async (t) => {
    if (!requireBwrap(t)) return;
    if (!requireService(t, 'perl', present, 'perl is not on PATH (Debian: perl-base)')) return;
    const dir = tempDir(t);
    const server = `
      process.on('SIGTERM', () => { process.stderr.write('graceful\\n'); process.exit(0); });
      require('node:http').createServer((q, s) => s.end('inside ' + q.url)).listen(8080, '127.0.0.1', () => process.stdout.write('listening\\n'));`;
    const sandbox = runRelayed(
      t,
      program,
      dir,
      { inbound: { socket: `${SANDBOX_SOCKET_DIR}/inbound.sock`, port: 8080 } },
      server,
    );
    while (!sandbox.stdout().includes('listening\n'))
      await once(sandbox.child.stdout as NodeJS.ReadableStream, 'data');
    const answer = await new Promise<string>((resolve, reject) => {
      const req = request({ socketPath: join(dir, 'inbound.sock'), path: '/through' }, (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (s: string) => (body += s));
        res.on('end', () => resolve(body));
      });
      req.on('error', reject);
      req.end();
    });
    assert.equal(answer, 'inside /through');
    // The runtime's stop: SIGTERM to bwrap's grandchild (the server itself under the perl
    // relay, which execs it; the Node relay, which passes it on).
    const inner = sandboxedPid(sandbox.child.pid as number);
    assert.ok(inner !== undefined);
    process.kill(inner, 'SIGTERM');
    assert.deepEqual(await sandbox.exited, { code: 0, signal: null });
    assert.match(sandbox.stderr(), /graceful/);
  });

  test(`${name} relay: an unreachable upstream closes the connection; a server that cannot start is 127; a socket that cannot be listened on is 70 and nothing starts`, async (t) => {
    if (!requireBwrap(t)) return;
    if (!requireService(t, 'perl', present, 'perl is not on PATH (Debian: perl-base)')) return;
    const dir = tempDir(t);
    // No egress.sock outside: the connection is accepted, then closed.
    const client = `
      const socket = require('node:net').connect(3128, '127.0.0.1', () => socket.write('x'));
      socket.on('error', (e) => process.stdout.write('error ' + e.code));
      socket.on('close', () => process.stdout.write(' closed'));`;
    const unreachable = runRelayed(
      t,
      program,
      dir,
      { egress: { port: 3128, socket: `${SANDBOX_SOCKET_DIR}/egress.sock` } },
      client,
    );
    assert.deepEqual(await unreachable.exited, { code: 0, signal: null }, unreachable.stderr());
    assert.match(unreachable.stdout(), /closed$/);

    const missing = sandboxed(t, dir, relayLaunch(program, {}, '/nonexistent/skep-server', []));
    assert.deepEqual(await missing.exited, { code: 127, signal: null });
    assert.match(missing.stderr(), /\[skep sandbox\] cannot start \/nonexistent\/skep-server/);

    // The inbound socket's path is taken: the relay cannot listen there, and nothing starts.
    writeFileSync(join(dir, 'inbound.sock'), '');
    const taken = runRelayed(
      t,
      program,
      dir,
      { inbound: { socket: `${SANDBOX_SOCKET_DIR}/inbound.sock`, port: 8080 } },
      'process.stdout.write("started")',
    );
    assert.deepEqual(await taken.exited, { code: 70, signal: null });
    assert.match(taken.stderr(), /\[skep sandbox\] relay: cannot listen on unix:\/run\/skep\/inbound\.sock/);
    assert.equal(taken.stdout(), '', 'the server did not start');
  });
}
