/**
 * `skep run` shows that it is waiting: on a terminal a live line with the
 * seconds waited (a real pseudo-terminal from util-linux `script`), without one a line once
 * the wait gets slow (after 5 s). The server is `sleep`, which never answers.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { CLI_ARGS } from '../../helpers/cli.js';
import { tempHome } from '../../helpers/home.js';
import { hasCommand, requireService } from '../../helpers/services.js';
import { cleanupFirst } from './cleanup.js';

const exec = promisify(execFile);

test(
  'skep run: a live progress line on a terminal, a plain one when slow otherwise',
  { timeout: 120_000 },
  async (t) => {
    if (!requireService(t, 'script (util-linux)', hasCommand('script'), 'apt-get install bsdutils')) return;
    const later = cleanupFirst(t);
    const home = tempHome(t, 'skep-progress-');
    const env = { ...home.env, SKEP_LOG_LEVEL: 'silent' };
    later(async () => {
      await exec(process.execPath, [...CLI_ARGS, 'rm', 'live', 'quiet'], { env }).catch(() => undefined);
    });

    const command = [
      process.execPath,
      ...CLI_ARGS,
      'run',
      'cmd:///bin/sleep',
      '--name',
      'live',
      '--wait',
      '2',
      '--',
      '600',
    ]
      .map((a) => `'${a}'`)
      .join(' ');
    const tty = spawn('script', ['-qfec', command, '/dev/null'], {
      env,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let screen = '';
    tty.stdout.setEncoding('utf8').on('data', (d: string) => {
      screen += d;
    });
    const [code] = (await once(tty, 'exit')) as [number];
    assert.equal(code, 1, screen);
    assert.match(screen, /\r\x1b\[2Kstarting live \(0s\): waiting for the server to answer/);
    assert.match(screen, /\r\x1b\[2Kstarting live \(1s\): waiting for the server to answer/);
    // The live line is cleared before the error.
    assert.match(screen, /\r\x1b\[2Kerror: workload live did not answer within 2s\r?\n/);

    const plain = await exec(
      process.execPath,
      [...CLI_ARGS, 'run', 'cmd:///bin/sleep', '--name', 'quiet', '--wait', '6', '--', '600'],
      { env },
    ).then(
      () => assert.fail('must time out'),
      (err: { code: number; stderr: string }) => err,
    );
    assert.equal(plain.code, 1);
    assert.deepEqual(plain.stderr.split('\n').slice(0, 2), [
      'quiet: still starting after 5s (waiting for the server to answer)',
      'error: workload quiet did not answer within 6s',
    ]);
    assert.doesNotMatch(plain.stderr, /\x1b/, 'no terminal codes into a pipe');
  },
);
