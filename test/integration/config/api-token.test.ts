/**
 * The API token file is created exclusively: several `skep serve` processes starting at once
 * (real child processes, each resolving the token with create) agree on one token.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { fileURLToPath } from 'node:url';

function paths(t: TestContext): { apiTokenFile: string } {
  const dir = mkdtempSync(join(tmpdir(), 'skep-token-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return { apiTokenFile: join(dir, 'state', 'api-token') };
}

test('two servers starting at once agree on one token (exclusive create)', async (t) => {
  const p = paths(t);
  const module = fileURLToPath(new URL('../../../src/config/api-token.ts', import.meta.url));
  const script = `import { resolveApiToken } from ${JSON.stringify(module)};
process.stdout.write(resolveApiToken({ apiTokenFile: ${JSON.stringify(p.apiTokenFile)} }, {}, { create: true }).token);`;
  const runs = Array.from({ length: 4 }, async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      out += d;
    });
    const [code] = (await once(child, 'exit')) as [number];
    assert.equal(code, 0);
    return out;
  });
  const tokens = await Promise.all(runs);
  assert.equal(new Set(tokens).size, 1, tokens.join(' '));
  assert.equal(readFileSync(p.apiTokenFile, 'utf8'), `${tokens[0]}\n`);
});
