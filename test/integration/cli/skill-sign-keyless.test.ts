/**
 * `skep skill push --sign` / `--keyless` without an OIDC identity token, as a real `skep` process
 * on a temporary home: refused before anything is pushed, with a message that says where a token
 * comes from (SIGSTORE_ID_TOKEN, as cosign reads it) and that a key signs offline; `--keyless`
 * with `--key` is refused as a contradiction.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runCliAsync } from '../../helpers/cli.js';
import { tempHome } from '../../helpers/home.js';

test('skep skill push --sign/--keyless without a token: a clear message, nothing pushed', async (t) => {
  const home = tempHome(t, 'skep-skill-keyless-cli-');
  const env: NodeJS.ProcessEnv = { ...home.env, SKEP_LOG_LEVEL: 'silent' };
  delete env['SIGSTORE_ID_TOKEN'];
  const skep = (...args: string[]) => runCliAsync(args, env, 60_000);
  for (const flag of ['--sign', '--keyless']) {
    const out = await skep('skill', 'push', '127.0.0.1:9/skills/x:1', flag);
    assert.notEqual(out.status, 0, out.stderr);
    assert.match(
      out.stderr,
      /keyless signing needs an OIDC identity token, and none is available here: set SIGSTORE_ID_TOKEN/,
    );
    assert.match(out.stderr, /id-token: write/);
    assert.match(out.stderr, /sign with a key, which works offline: --sign --key </);
  }
  const both = await skep('skill', 'push', '127.0.0.1:9/skills/x:1', '--keyless', '--key', 'cosign.key');
  assert.notEqual(both.status, 0);
  assert.match(both.stderr, /--keyless and --key exclude each other/);
});
