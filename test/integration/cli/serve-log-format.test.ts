/**
 * `skep serve` logs: JSON lines when stderr is a pipe or a file (for log
 * collectors), human-readable lines on a terminal. The terminal is a real pseudo-terminal
 * from util-linux `script`; the server is the real CLI process.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import type { Readable } from 'node:stream';
import { test } from 'node:test';
import { CLI_ARGS } from '../../helpers/cli.js';
import { tempHome } from '../../helpers/home.js';
import { hasCommand, requireService } from '../../helpers/services.js';
import { cleanupFirst } from './cleanup.js';

/** Resolves with everything read from `stream` once `pattern` matches it (rejects if it ends first). */
function readUntil(stream: Readable, pattern: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const onData = (chunk: Buffer) => {
      text += chunk.toString('utf8');
      if (pattern.test(text)) {
        stream.off('data', onData);
        resolve(text);
      }
    };
    stream.on('data', onData);
    stream.once('end', () => reject(new Error(`output ended before ${pattern}: ${text}`)));
  });
}

/** Stops the process group of a detached child at the end of the test (before its home goes). */
function reap(later: (fn: () => unknown) => void, child: ChildProcess): void {
  const exited = once(child, 'exit');
  later(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      process.kill(-(child.pid as number), 'SIGTERM');
      await exited;
    }
  });
}

const LISTENING = /skep serve is listening/;

test('skep serve logs JSON lines into a pipe', { timeout: 60_000 }, async (t) => {
  const later = cleanupFirst(t);
  const home = tempHome(t);
  const child = spawn(process.execPath, [...CLI_ARGS, 'serve', '--port', '0'], {
    env: { ...home.env, SKEP_LOG_LEVEL: 'info' },
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: true,
  });
  reap(later, child);
  const text = await readUntil(child.stderr, LISTENING);
  const line = text.split('\n').find((l) => LISTENING.test(l)) as string;
  const entry = JSON.parse(line) as Record<string, unknown>;
  assert.equal(entry['level'], 30);
  assert.equal(entry['name'], 'skep');
  assert.equal(entry['msg'], 'skep serve is listening');
  assert.match(String(entry['url']), /^http:\/\/127\.0\.0\.1:\d+$/);
});

test('skep serve logs readable lines on a terminal', { timeout: 60_000 }, async (t) => {
  if (!requireService(t, 'script (util-linux)', hasCommand('script'), 'apt-get install bsdutils')) return;
  const later = cleanupFirst(t);
  const home = tempHome(t);
  const command = [process.execPath, ...CLI_ARGS, 'serve', '--port', '0'].map((a) => `'${a}'`).join(' ');
  const child = spawn('script', ['-qfec', command, '/dev/null'], {
    env: { ...home.env, SKEP_LOG_LEVEL: 'info', NO_COLOR: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  reap(later, child);
  const text = await readUntil(child.stdout, LISTENING);
  const line = text.split(/\r?\n/).find((l) => LISTENING.test(l)) as string;
  assert.match(
    line,
    /^\d\d:\d\d:\d\d\.\d{3} INFO {2}skep: skep serve is listening url=http:\/\/127\.0\.0\.1:\d+ state=\S+ api_token=\S+$/,
  );
  assert.doesNotMatch(text, /"level":/, 'no JSON on the terminal');
});
