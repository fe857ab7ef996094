/**
 * Credentials go only where they are meant: a git skill reference names
 * any host, so `GIT_TOKEN` is sent only to the hosts `SKEP_GIT_TOKEN_HOSTS` lists. A real
 * smart-HTTP git server on loopback (`git http-backend`) records the `Authorization` header
 * of every request git makes to it.
 */
import assert from 'node:assert/strict';
import { dirname } from 'node:path';
import { test } from 'node:test';
import { SkepError } from '../../../src/shared/index.js';
import { checkoutGitSkill, GIT_TOKEN_HOSTS_ENV, parseGitRef } from '../../../src/skills/git-source.js';
import { hasCommand, requireService } from '../../helpers/services.js';
import { startGitDaemon, startGitHttp, writeSkill } from './fixtures.js';

const TOKEN = 'git-token-for-the-listed-host-only';
const BASIC = `Basic ${Buffer.from(`x-access-token:${TOKEN}`).toString('base64')}`;

test(
  'GIT_TOKEN is sent only to a host in SKEP_GIT_TOKEN_HOSTS (host, or host:port)',
  { timeout: 120_000 },
  async (t) => {
    if (!requireService(t, 'git', hasCommand('git'), 'apt-get install git')) return;
    const daemon = await startGitDaemon(t);
    writeSkill(`${daemon.repo}/skills`, 'token-skill');
    const commit = daemon.commit('token skill');
    const http = await startGitHttp(t, dirname(dirname(daemon.repo)));
    const ref = parseGitRef(`git://127.0.0.1:${http.port}/owner/repo#skills/token-skill`);
    const options = { privateHosts: [`127.0.0.1:${http.port}`], scheme: 'http' as const, timeoutMs: 60_000 };
    const checkout = async (env: NodeJS.ProcessEnv) => {
      const before = http.authorizations.length;
      const result = await checkoutGitSkill(ref, options, { PATH: process.env['PATH'], ...env });
      await result.dispose();
      assert.equal(result.commit, commit);
      const sent = http.authorizations.slice(before);
      assert.ok(sent.length > 0, 'git made requests');
      return sent;
    };

    // Unlisted (no list, another host, another port): the server sees no credentials.
    for (const hosts of [undefined, 'git.example.com', `127.0.0.1:${http.port + 1}`, 'github.com']) {
      const sent = await checkout({
        GIT_TOKEN: TOKEN,
        ...(hosts === undefined ? {} : { [GIT_TOKEN_HOSTS_ENV]: hosts }),
      });
      assert.deepEqual(new Set(sent), new Set([undefined]), `${GIT_TOKEN_HOSTS_ENV}=${String(hosts)}`);
    }
    // A host-specific token is not sent to another host either.
    assert.deepEqual(
      new Set(await checkout({ GITHUB_TOKEN: TOKEN, GITLAB_TOKEN: TOKEN })),
      new Set([undefined]),
    );

    // Listed by host (any port) or by host:port: every request carries it.
    for (const hosts of ['127.0.0.1', `git.example.com, 127.0.0.1:${http.port}`]) {
      const sent = await checkout({ GIT_TOKEN: TOKEN, [GIT_TOKEN_HOSTS_ENV]: hosts });
      assert.deepEqual(new Set(sent), new Set([BASIC]), hosts);
    }

    // A bad entry is a 400 naming the variable, before git runs.
    await assert.rejects(
      checkoutGitSkill(ref, options, { GIT_TOKEN: TOKEN, [GIT_TOKEN_HOSTS_ENV]: 'a:b:c' }),
      (err: unknown) =>
        err instanceof SkepError && err.code === 'invalid_config' && /SKEP_GIT_TOKEN_HOSTS/.test(err.message),
    );
  },
);

test(
  'a failed fetch says when GIT_TOKEN was withheld from an unlisted host',
  { timeout: 120_000 },
  async (t) => {
    if (!requireService(t, 'git', hasCommand('git'), 'apt-get install git')) return;
    const daemon = await startGitDaemon(t);
    const http = await startGitHttp(t, dirname(dirname(daemon.repo)));
    const ref = parseGitRef(`git://127.0.0.1:${http.port}/owner/private-repo`);
    await assert.rejects(
      checkoutGitSkill(
        ref,
        { privateHosts: ['127.0.0.1'], scheme: 'http', timeoutMs: 60_000 },
        { PATH: process.env['PATH'], GIT_TOKEN: TOKEN },
      ),
      /GIT_TOKEN was not sent: 127\.0\.0\.1:\d+ is not in SKEP_GIT_TOKEN_HOSTS/,
    );
    assert.ok(http.authorizations.length > 0);
    assert.ok(http.authorizations.every((a) => a === undefined));
  },
);
