/**
 * Secrets end to end: a workload that references a secret receives its value as an
 * environment variable, resolved in the detached runner process (a separate process that
 * finds the password in the 0600 password file written by setup), and the value appears
 * nowhere in the state dir, the logs or the export.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { createContext } from '../../../src/control/app/index.js';
import { buildTestApp } from '../../helpers/api.js';
import { loadConfig } from '../../../src/config/index.js';
import { passwordFilePath } from '../../../src/secrets/index.js';
import { runnerAlive } from '../../../src/workloads/index.js';
import { childPids, everythingBody, runnerPidOf, waitForStatus } from '../workloads/helpers.js';

// This test proves the password-file path: the runner must not get the password from the
// environment, so an inherited SKEP_SECRETS_PASSWORD is removed for this process (and its children).
delete process.env['SKEP_SECRETS_PASSWORD'];

function descendants(pid: number): number[] {
  const out: number[] = [];
  for (const child of childPids(pid)) out.push(child, ...descendants(child));
  return out;
}

function environOf(pid: number): Map<string, string> {
  const env = new Map<string, string>();
  try {
    for (const entry of readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')) {
      const eq = entry.indexOf('=');
      if (eq > 0) env.set(entry.slice(0, eq), entry.slice(eq + 1));
    }
  } catch {
    // the process exited meanwhile
  }
  return env;
}

/** Every regular file under `dir` whose bytes contain `needle`. */
function filesContaining(dir: string, needle: string): string[] {
  const hits: string[] = [];
  for (const entry of readdirSync(dir, { recursive: true, encoding: 'utf8' })) {
    const path = join(dir, entry);
    if (!statSync(path).isFile()) continue;
    if (readFileSync(path).includes(needle)) hits.push(entry);
  }
  return hits;
}

test(
  'a workload receives its secret as an env var; the value is in no file, log or export',
  {
    timeout: 600_000,
  },
  async (t) => {
    // One clean-up hook, in the order that matters: workloads (runners), then the app and
    // store, then the temp home.
    const dir = mkdtempSync(join(tmpdir(), 'skep-secrets-wl-'));
    const config = loadConfig({ ...process.env, SKEP_HOME: dir });
    const ctx = createContext(config);
    const app = await buildTestApp(ctx);
    t.after(async () => {
      try {
        const rows = ctx.workloads.rows.list();
        await ctx.workloads.settled();
        await Promise.all(rows.map((r) => ctx.workloads.deleteNow(r.name)));
        for (const row of rows)
          assert.ok(!runnerAlive(row.runnerPid, row.name), `runner of ${row.name} stopped`);
      } finally {
        await app.close();
        await ctx.close();
        rmSync(dir, { recursive: true, force: true });
      }
    });
    const inject = async (method: 'GET' | 'POST', url: string, payload?: unknown) => {
      const res = await app.inject({
        method,
        url,
        ...(payload === undefined ? {} : { payload: payload as object }),
      });
      return { status: res.statusCode, body: res.body };
    };
    const value = `skep-e2e-secret-${randomBytes(12).toString('hex')}`;

    const setup = await inject('POST', '/api/v1beta/secrets', { provider_type: 'encrypted' });
    assert.equal(setup.status, 201, setup.body);
    assert.match(setup.body, /secrets-password \(mode 0600\)/);
    const created = await inject('POST', '/api/v1beta/secrets/default/keys', { key: 'gh-token', value });
    assert.equal(created.status, 201, created.body);

    const missing = await inject('POST', '/api/v1beta/workloads', {
      ...everythingBody('nosecret'),
      secrets: [{ name: 'not-there', target: 'TOKEN' }],
    });
    assert.equal(missing.status, 404, missing.body);
    assert.match(missing.body, /not-there/);

    const res = await inject('POST', '/api/v1beta/workloads', {
      ...everythingBody('with-secret'),
      secrets: [{ name: 'gh-token', target: 'GITHUB_PERSONAL_ACCESS_TOKEN' }],
    });
    assert.equal(res.status, 201, res.body);
    await waitForStatus(ctx, 'with-secret', 'running');

    const runner = runnerPidOf(ctx, 'with-secret');
    const receivers = descendants(runner).filter(
      (pid) => environOf(pid).get('GITHUB_PERSONAL_ACCESS_TOKEN') === value,
    );
    assert.ok(
      receivers.length > 0,
      'the server process has GITHUB_PERSONAL_ACCESS_TOKEN set to the secret value',
    );
    assert.notEqual(
      environOf(runner).get('GITHUB_PERSONAL_ACCESS_TOKEN'),
      value,
      'the runner itself does not export it',
    );

    const exported = await inject('GET', '/api/v1beta/workloads/with-secret/export');
    assert.equal(exported.status, 200);
    assert.ok(
      exported.body.includes('gh-token,target=GITHUB_PERSONAL_ACCESS_TOKEN'),
      'the export holds the reference',
    );
    assert.ok(!exported.body.includes(value), 'the export holds no value');
    const logs = await inject('GET', '/api/v1beta/workloads/with-secret/proxy-logs');
    assert.ok(!logs.body.includes(value));

    // The whole temp home: state dir (SQLite + WAL), logs, config, data (encrypted file).
    assert.deepEqual(filesContaining(dir, value), [], 'no file under SKEP_HOME holds the value');
    // Positive control: the same scan does see what the store holds (the reference, in SQLite).
    assert.ok(filesContaining(dir, 'gh-token,target=GITHUB_PERSONAL_ACCESS_TOKEN').length > 0);
    // The generated password lives in its 0600 file and nowhere else (not in logs or state).
    const password = readFileSync(passwordFilePath(config.paths), 'utf8').trim();
    assert.deepEqual(filesContaining(dir, password), [join('config', 'secrets-password')]);
  },
);
