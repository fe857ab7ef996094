/**
 * `skep secret setup` on a real pseudo-terminal (util-linux `script`): a new encrypted store asks
 * for the password once and to repeat it once; a password the user typed is written nowhere
 * unless `--save-password`, and the message says where it went (or that it went nowhere); an
 * existing store asks once for its password; a saved password means no question at all.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { passwordFilePath } from '../../../src/secrets/index.js';
import { CLI_ARGS, runCli } from '../../helpers/cli.js';
import { tempHome } from '../../helpers/home.js';
import { hasCommand, requireService } from '../../helpers/services.js';

const TYPED = 'typed-on-a-terminal-42';

/**
 * Runs `skep <args>` on a pseudo-terminal; each time the output shows a prompt of `answers`
 * (in order), types its answer. Resolves with the exit code and everything the terminal showed.
 */
function onTerminal(
  t: TestContext,
  env: NodeJS.ProcessEnv,
  args: string[],
  answers: [RegExp, string][],
): Promise<{ code: number | null; text: string }> {
  const command = [process.execPath, ...CLI_ARGS, ...args].map((a) => `'${a}'`).join(' ');
  const child = spawn('script', ['-qfec', command, '/dev/null'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  t.after(() => {
    if (child.exitCode === null) child.kill();
  });
  let text = '';
  let next = 0;
  let from = 0;
  child.stdout.on('data', (chunk: Buffer) => {
    text += chunk.toString('utf8');
    const answer = answers[next];
    // Answer each prompt once, when it appears after the previous answer.
    if (answer !== undefined && answer[0].test(text.slice(from))) {
      next++;
      from = text.length;
      child.stdin.write(`${answer[1]}\r`);
    }
  });
  return new Promise((resolve) => {
    child.on('exit', (code) => {
      child.stdin.end();
      resolve({ code, text });
    });
  });
}

function filesContaining(dir: string, needle: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((entry) => {
    const path = join(dir, entry);
    return statSync(path).isFile() && readFileSync(path).includes(needle);
  });
}

const NEW = /New password for the encrypted secrets store \(empty: generate a strong one and save it\): /;
const AGAIN = /The same password again: /;
const EXISTING = /Password of the encrypted secrets store: /;

test(
  'secret setup on a terminal: asked once (and repeated once when new); saved only with --save-password',
  { timeout: 240_000 },
  async (t) => {
    if (!requireService(t, 'script (util-linux)', hasCommand('script'), 'apt-get install bsdutils')) return;
    const home = tempHome(t);
    const env: NodeJS.ProcessEnv = { ...home.env, NO_COLOR: '1' };
    delete env['SKEP_SECRETS_PASSWORD'];
    const passwordFile = passwordFilePath(home.config.paths);

    const created = await onTerminal(
      t,
      env,
      ['secret', 'setup'],
      [
        [NEW, TYPED],
        [AGAIN, TYPED],
      ],
    );
    assert.equal(created.code, 0, created.text);
    assert.equal(created.text.match(new RegExp(NEW.source, 'g'))?.length, 1);
    assert.equal(created.text.match(new RegExp(AGAIN.source, 'g'))?.length, 1);
    assert.doesNotMatch(created.text, EXISTING);
    assert.match(created.text, /the password was not saved anywhere: commands in a terminal ask for it/);
    assert.match(created.text, /--save-password/);
    assert.equal(existsSync(passwordFile), false);
    assert.deepEqual(filesContaining(home.dir, TYPED), [], 'the typed password is in no file');

    // The store is bound to the typed password: with it in the environment, a secret can be set.
    const set = runCli(['secret', 'set', 'k'], { ...env, SKEP_SECRETS_PASSWORD: TYPED }, 'v1\n');
    assert.equal(set.status, 0, set.stderr);

    // The store exists and nothing is saved: its password, asked once; --save-password keeps it.
    const saved = await onTerminal(t, env, ['secret', 'setup', '--save-password'], [[EXISTING, TYPED]]);
    assert.equal(saved.code, 0, saved.text);
    assert.equal(saved.text.match(new RegExp(EXISTING.source, 'g'))?.length, 1);
    assert.doesNotMatch(saved.text, NEW);
    assert.match(saved.text, /the password was saved (to .*secrets-password \(mode 0600\)|in )/);
    assert.equal(readFileSync(passwordFile, 'utf8').trim(), TYPED);

    // A saved password: no question at all.
    const quiet = await onTerminal(t, env, ['secret', 'setup'], []);
    assert.equal(quiet.code, 0, quiet.text);
    assert.doesNotMatch(quiet.text, /password[^\n]*: $/im);
    assert.match(quiet.text, /using the saved password/);
    assert.equal(runCli(['secret', 'get', 'k'], env).stdout, 'v1\n');

    // Repeated differently: nothing is set up, nothing written.
    const other = tempHome(t);
    const otherEnv: NodeJS.ProcessEnv = { ...other.env, NO_COLOR: '1' };
    delete otherEnv['SKEP_SECRETS_PASSWORD'];
    const differ = await onTerminal(
      t,
      otherEnv,
      ['secret', 'setup'],
      [
        [NEW, TYPED],
        [AGAIN, `${TYPED}-not`],
      ],
    );
    assert.equal(differ.code, 1, differ.text);
    assert.match(differ.text, /error: the two passwords differ; nothing was set up/);
    assert.equal(runCli(['secret', 'list'], otherEnv).status, 1);
  },
);
