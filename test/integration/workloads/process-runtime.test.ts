import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ProcessRuntime, processCommand } from '../../../src/dataplane/runtime/index.js';
import { isSkepError } from '../../../src/shared/index.js';
import { freePort } from '../../helpers/net.js';

test('npx://, uvx:// and cmd:// map to their commands; a container image is refused', () => {
  assert.deepEqual(processCommand('npx://@scope/pkg@1', ['--x']), {
    command: 'npx',
    args: ['-y', '--', '@scope/pkg@1', '--x'],
  });
  assert.deepEqual(processCommand('uvx://mcp-fetch', []), { command: 'uvx', args: ['mcp-fetch'] });
  assert.deepEqual(processCommand('cmd:///bin/srv', ['a']), { command: '/bin/srv', args: ['a'] });
  assert.throws(
    () => processCommand('ghcr.io/x/y:1', []),
    (e) => isSkepError(e) && e.code === 'runtime_unavailable',
  );
  assert.throws(
    () => processCommand('ftp://x', []),
    (e) => isSkepError(e) && /unknown scheme/.test(e.message),
  );
});

test('XBD §12.2 guideline 4: a package spec that npx or uvx would read as an option is refused, naming the image field', () => {
  for (const image of [
    'npx://--call=touch /tmp/skep-pwned',
    'npx://-c',
    'uvx://--from=evil-package',
    'uvx://-w',
    'npx://pkg --call=x',
    'npx://pkg\t--call=x',
    'uvx://pkg\u009b2J',
  ])
    assert.throws(
      () => processCommand(image, []),
      (e) =>
        isSkepError(e) &&
        e.code === 'invalid_reference' &&
        e.message.startsWith(`image: the package in '${image}' `) &&
        /starts with '-'|white space or a control character/.test(e.message),
      image,
    );
});

test('npx gets the package after `--` (XBD §12.2 guideline 10): server arguments that look like npx options reach the server', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'skep-npx-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // A real package, packed offline: its bin prints the arguments it was given.
  const pkg = join(dir, 'pkg');
  mkdirSync(pkg);
  writeFileSync(
    join(pkg, 'package.json'),
    JSON.stringify({ name: 'skep-argv-echo', version: '1.0.0', bin: { 'skep-argv-echo': 'argv.js' } }),
  );
  writeFileSync(
    join(pkg, 'argv.js'),
    '#!/usr/bin/env node\nprocess.stderr.write(`argv=${JSON.stringify(process.argv.slice(2))}\\n`);\n',
  );
  chmodSync(join(pkg, 'argv.js'), 0o755);
  const offline = {
    npm_config_offline: 'true',
    npm_config_update_notifier: 'false',
    npm_config_cache: join(dir, 'cache'),
  };
  execFileSync('npm', ['pack', '--silent', '--pack-destination', dir], {
    cwd: pkg,
    env: { ...process.env, ...offline },
    stdio: 'ignore',
    timeout: 60_000,
  });
  const runtime = new ProcessRuntime({ logMaxBytes: 1 << 20, logFiles: 1 });
  const handle = await runtime.start({
    name: 'npx-argv',
    image: `npx://file:${join(dir, 'skep-argv-echo-1.0.0.tgz')}`,
    args: ['--version', '-y', '--call=echo pwned'],
    env: offline,
    transport: 'stdio',
    logFile: join(dir, 'npx.log'),
  });
  t.after(() => handle.stop());
  handle.stdio?.stdin.end();
  await handle.exited;
  assert.match(readFileSync(join(dir, 'npx.log'), 'utf8'), /argv=\["--version","-y","--call=echo pwned"\]/);
});

test('process runtime: stdio server gets env and args, stderr goes to the log file, stop is idempotent', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'skep-rt-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const runtime = new ProcessRuntime({ logMaxBytes: 1 << 20, logFiles: 1 });
  const script =
    "process.stderr.write('hello from ' + process.env.GREETING + ' ' + process.argv[1] + '\\n'); process.stdin.pipe(process.stdout);";
  const handle = await runtime.start({
    name: 't',
    image: `cmd://${process.execPath}`,
    args: ['-e', script, 'arg1'],
    env: { GREETING: 'skep' },
    transport: 'stdio',
    logFile: join(dir, 't.log'),
  });
  t.after(() => handle.stop());
  assert.ok(handle.stdio);
  const echoed = new Promise<string>((resolve) =>
    handle.stdio?.stdout.once('data', (d: Buffer) => resolve(d.toString())),
  );
  handle.stdio.stdin.write('ping\n');
  assert.equal(await echoed, 'ping\n');
  await handle.stop();
  await handle.stop();
  const exit = await handle.exited;
  assert.ok(exit.signal === 'SIGTERM' || exit.code !== null);
  assert.match(readFileSync(join(dir, 't.log'), 'utf8'), /hello from skep arg1/);
});

test('process runtime: an HTTP server gets PORT/MCP_PORT and is ready once it listens', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'skep-rt-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const runtime = new ProcessRuntime({ logMaxBytes: 1 << 20, logFiles: 1 });
  const port = await freePort();
  const script =
    "require('http').createServer((q,s)=>s.end(process.env.MCP_PORT)).listen(Number(process.env.PORT),'127.0.0.1')";
  const handle = await runtime.start({
    name: 'h',
    image: `cmd://${process.execPath}`,
    args: ['-e', script],
    env: {},
    transport: 'streamable-http',
    targetPort: port,
    logFile: join(dir, 'h.log'),
  });
  t.after(() => handle.stop());
  assert.equal(handle.url, `http://127.0.0.1:${port}/mcp`);
  const res = await fetch(`http://127.0.0.1:${port}/`);
  assert.equal(await res.text(), String(port));
});

test('process runtime: a missing executable fails start with a clear error', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'skep-rt-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const runtime = new ProcessRuntime({ logMaxBytes: 1 << 20, logFiles: 1 });
  await assert.rejects(
    runtime.start({
      name: 'm',
      image: 'cmd:///nonexistent/server',
      args: [],
      env: {},
      transport: 'stdio',
      logFile: join(dir, 'm.log'),
    }),
    (e) =>
      isSkepError(e) &&
      e.code === 'executable_not_found' &&
      /cannot start '\/nonexistent\/server': it was not found/.test(e.message),
  );
});
