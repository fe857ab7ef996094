/**
 * `scaling_config.session_redis` and `session_ttl` through real workloads:
 * run configurations imported like `skep run --from-config`, two runners run in this process,
 * each proxying the same streamable-HTTP MCP server (the conformance fixture, reached as a
 * remote URL on loopback), sharing one real Redis. The runner opens the session store and
 * hands it to its proxy: a session initialized through one workload continues through the
 * other, its record carries the TTL of `session_ttl`, and when the server forgets the session
 * the other workload's proxy re-initializes it. Bad values are refused before anything runs.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { isSkepError } from '../../../src/shared/index.js';
import { freePort } from '../../helpers/net.js';
import { cli, REDIS_HINT, redisAvailable, startRedis } from '../../helpers/redis.js';
import { requireService } from '../../helpers/services.js';
import { FIXTURE_SERVER, printed, spawnServer } from '../proxy/helpers.js';
import { inProcessManager, runInProcess, waitFor, workloadEndpoint } from './helpers.js';

async function simpleText(client: Client): Promise<string> {
  const result = (await client.callTool({ name: 'test_simple_text', arguments: {} })) as {
    content: { text?: string }[];
  };
  return result.content.map((c) => c.text ?? '').join('');
}

test(
  'two workloads of one streamable-HTTP server share sessions through Redis (runner wiring, session_ttl)',
  { timeout: 300_000 },
  async (t) => {
    if (!requireService(t, 'redis-server', redisAvailable(), REDIS_HINT)) return;
    const redis = await startRedis();
    t.after(() => redis.stop());
    const port = await freePort();
    await printed(spawnServer(t, ['--import', 'tsx', FIXTURE_SERVER, 'http', String(port)]), /listening/);
    const serverUrl = `http://127.0.0.1:${port}/mcp`;

    const { ctx, manager } = inProcessManager(t);
    const fields = {
      remote_url: serverUrl,
      transport: 'streamable-http',
      session_ttl: '45m',
      scaling_config: { session_redis: { address: redis.addr, db: 4, key_prefix: 'skep:s:' } },
    };
    const running: { controller: AbortController; done: Promise<number> }[] = [];
    const urls: string[] = [];
    try {
      for (const name of ['search', 'search-replica']) {
        await manager.createFromConfig({ name, ...fields }, { name });
        const controller = new AbortController();
        running.push({ controller, done: runInProcess(ctx, name, controller.signal) });
        await waitFor(`${name} to be running`, () =>
          manager.rows.get(name)?.status === 'running' ? true : undefined,
        );
        urls.push(workloadEndpoint(manager, name));
      }
      const [one, two] = urls as [string, string];

      const first = new StreamableHTTPClientTransport(new URL(one));
      const a = new Client({ name: 'session-redis-test', version: '1.0.0' });
      await a.connect(first);
      t.after(() => a.close());
      assert.match(await simpleText(a), /simple text response/);
      const sid = first.sessionId as string;
      const key = `skep:s:${sid}`;
      const redisCli = (...args: string[]) => cli(redis.port, undefined, '-n', '4', ...args).trim();
      const ttl = Number(redisCli('TTL', key));
      assert.ok(ttl > 2690 && ttl <= 2700, `session_ttl 45m: ${ttl}`);

      const second = new StreamableHTTPClientTransport(new URL(two), { sessionId: sid });
      const b = new Client({ name: 'session-redis-test', version: '1.0.0' });
      await b.connect(second);
      second.setProtocolVersion(first.protocolVersion as string);
      t.after(() => b.close());
      assert.match(await simpleText(b), /simple text response/, 'continued through the other workload');

      // The server forgets the session (ended behind the proxies' back): the next call through
      // the other workload re-initializes it from the stored initialize request.
      const ended = await fetch(serverUrl, { method: 'DELETE', headers: { 'mcp-session-id': sid } });
      assert.equal(ended.status, 200);
      assert.match(await simpleText(b), /simple text response/);
      const record = JSON.parse(redisCli('GET', key)) as { metadata: Record<string, string> };
      assert.ok(record.metadata['backend_sid'] !== undefined && record.metadata['backend_sid'] !== sid);
      assert.equal(second.sessionId, sid);
    } finally {
      for (const r of running) r.controller.abort();
      for (const r of running) assert.equal(await r.done, 0, 'runner exit code');
    }

    // Refused before anything is written: a prefix without ':' (400 naming the field), and
    // session_redis on a stdio server without rate limits (its sessions cannot move).
    await assert.rejects(
      manager.createFromConfig(
        {
          name: 'bad-prefix',
          ...fields,
          scaling_config: { session_redis: { address: redis.addr, key_prefix: 'skep' } },
        },
        { name: 'bad-prefix' },
      ),
      (err) =>
        isSkepError(err) &&
        err.status === 400 &&
        /^scaling_config\.session_redis\.key_prefix "skep" must end with ':'/.test(err.message),
    );
    await assert.rejects(
      manager.createFromConfig(
        {
          name: 'stdio-redis',
          image: `cmd://${process.execPath}`,
          scaling_config: { session_redis: { address: redis.addr } },
        },
        { name: 'stdio-redis' },
      ),
      (err) =>
        isSkepError(err) &&
        err.code === 'unsupported_field' &&
        /^scaling_config\.session_redis is not supported for a stdio server without rate_limit_config/.test(
          err.message,
        ),
    );
    assert.equal(manager.rows.get('bad-prefix'), undefined);
    assert.equal(manager.rows.get('stdio-redis'), undefined);
  },
);
