/**
 * A local OCI registry (Debian docker-registry, distribution 2.8) that needs a login: its
 * htpasswd authentication, which answers `WWW-Authenticate: Basic` as a private registry behind
 * basic auth does. The password is a test fixture; its bcrypt hash (cost 4, the minimum, so
 * that every request stays fast) was made once with `crypt(3)`'s `$2b$`.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { freePort } from '../../helpers/net.js';
import { waitFor } from '../../helpers/wait.js';
import { REGISTRY_BIN, tempDir } from '../skills/fixtures.js';

export const REGISTRY_USER = 'skep';
export const REGISTRY_PASSWORD = 'skep-test-password';
const PASSWORD_HASH = '$2b$04$91JK90Af4VqbFjxqSE/2cOUN/O2Mpckf.H2JLC78sJIi.8HGlMeYi';

/** Starts the registry for this test; `host:port`. Stopped when the test ends. */
export async function startAuthRegistry(t: TestContext): Promise<string> {
  const dir = tempDir(t, 'skep-auth-registry-');
  const port = await freePort();
  writeFileSync(join(dir, 'htpasswd'), `${REGISTRY_USER}:${PASSWORD_HASH}\n`);
  const config = join(dir, 'config.yml');
  writeFileSync(
    config,
    [
      'version: 0.1',
      'log:',
      '  level: error',
      'storage:',
      '  filesystem:',
      `    rootdirectory: ${join(dir, 'data')}`,
      'http:',
      `  addr: 127.0.0.1:${port}`,
      'auth:',
      '  htpasswd:',
      '    realm: skep-test',
      `    path: ${join(dir, 'htpasswd')}`,
      '',
    ].join('\n'),
  );
  const child = spawn(REGISTRY_BIN, ['serve', config], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  t.after(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  });
  const login = `Basic ${Buffer.from(`${REGISTRY_USER}:${REGISTRY_PASSWORD}`).toString('base64')}`;
  await waitFor(
    'docker-registry (htpasswd)',
    async () =>
      (await fetch(`http://127.0.0.1:${port}/v2/`, { headers: { authorization: login } })).status === 200,
    30_000,
  ).catch((err: unknown) => {
    throw new Error(`${String(err)} (its stderr: ${stderr})`);
  });
  return `127.0.0.1:${port}`;
}

/** A containers-auth.json(5) file in `dir` with `password` for `registry`; its path. */
export function writeAuthFile(dir: string, registry: string, password = REGISTRY_PASSWORD): string {
  const file = join(dir, `auth-${password.length}-${Date.now()}.json`);
  const auth = Buffer.from(`${REGISTRY_USER}:${password}`).toString('base64');
  writeFileSync(file, JSON.stringify({ auths: { [registry]: { auth } } }), { mode: 0o600 });
  return file;
}
