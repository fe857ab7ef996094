/**
 * Outgoing auth per backend, against oidc-provider. The backends are real
 * workloads whose own proxies check the `Authorization` header (inbound OIDC auth, each for its
 * own audience), so a backend only answers when the virtual endpoint sends what it expects:
 * - `keyed` gets a fixed header (`header_injection`, value from an environment variable);
 * - `exchanged` gets the caller's token exchanged (RFC 8693) for its audience;
 * - `open` needs nothing.
 * The virtual endpoint itself takes inbound OIDC like any workload. A backend whose auth cannot
 * be built is left out with a status message, never served with the default strategy.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EXCHANGER, PROXY_AUDIENCE, startIdp } from '../auth/harness.js';
import { addGroup, callText, connect, lab, team, toolNames, virtual, waitFor } from './helpers.js';

test(
  'virtual MCP outgoing auth per backend: header injection and token exchange (oidc-provider)',
  { timeout: 300_000 },
  async (t) => {
    const idp = await startIdp(t);
    const l = lab(t);
    await addGroup(l, 'sec');
    const oidc = (audience: string) => ({ oidc: { issuer: idp.issuer, audience, jwks_url: idp.jwksUrl } });
    await team(l, 'keyed', 'sec', oidc('https://keyed.test'));
    await team(l, 'exchanged', 'sec', oidc('https://exchanged.test'));
    await team(l, 'open', 'sec');
    const keyedToken = await idp.clientToken('https://keyed.test');

    await virtual(
      l,
      'gate',
      'sec',
      {
        outgoingAuth: {
          source: 'inline',
          backends: {
            keyed: {
              type: 'header_injection',
              headerInjection: { headerName: 'Authorization', headerValueEnv: 'KEYED_TOKEN' },
            },
            exchanged: {
              type: 'token_exchange',
              tokenExchange: {
                tokenUrl: `${idp.issuer}/token`,
                clientId: EXCHANGER.id,
                clientSecret: EXCHANGER.secret,
                audience: 'https://exchanged.test',
              },
            },
          },
        },
      },
      Object.assign({ env_vars: { KEYED_TOKEN: `Bearer ${keyedToken}` } }, oidc(PROXY_AUDIENCE)),
    );

    await t.test(
      'each backend gets its own credentials; the caller token is exchanged per backend',
      async (t) => {
        const token = await idp.clientToken();
        const client = await connect(t, l.url('gate'), { token });
        const names = await toolNames(client);
        for (const n of ['keyed_search', 'exchanged_search', 'open_search'])
          assert.ok(names.includes(n), names.join(','));
        assert.equal(await callText(client, 'keyed_search', { query: 'k' }), 'keyed found k');
        assert.equal(await callText(client, 'exchanged_search', { query: 'e' }), 'exchanged found e');
        assert.equal(await callText(client, 'open_search', { query: 'o' }), 'open found o');
        assert.ok(
          idp.exchanges.some((x) => x.audience === 'https://exchanged.test' && x.clientId === EXCHANGER.id),
          JSON.stringify(idp.exchanges),
        );
      },
    );

    await t.test('the virtual endpoint takes inbound auth like any workload', async () => {
      const res = await fetch(`http://127.0.0.1:${l.port('gate')}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
      assert.equal(res.status, 401);
    });

    await t.test(
      'without the header a backend refuses; a backend whose auth cannot be built is left out, not given the default',
      async (t) => {
        await virtual(l, 'gate2', 'sec', {
          outgoingAuth: {
            source: 'inline',
            default: { type: 'unauthenticated' },
            backends: {
              open: {
                type: 'header_injection',
                headerInjection: { headerName: 'x-team-key', headerValueEnv: 'NOT_SET_ANYWHERE' },
              },
            },
          },
          operational: { failureHandling: { partialFailureMode: 'best_effort' } },
        });
        await waitFor('the status to name the left-out backend', () =>
          /open left out: .*NOT_SET_ANYWHERE/.test(l.manager.rows.get('gate2')?.statusContext ?? '')
            ? true
            : undefined,
        );
        const client = await connect(t, l.url('gate2'));
        const names = await toolNames(client);
        // keyed and exchanged answer 401 to the default (no credentials): left out of the lists
        // under best_effort; open is not served at all.
        assert.ok(!names.some((n) => n.startsWith('open_')), names.join(','));
        assert.ok(!names.some((n) => n.startsWith('keyed_')), names.join(','));
        assert.deepEqual(names, []);
      },
    );

    await t.test(
      'partialFailureMode fail: a backend that refuses fails the list with its name',
      async (t) => {
        await virtual(l, 'gate3', 'sec', {});
        const client = await connect(t, l.url('gate3'));
        await assert.rejects(client.listTools(), /backend (exchanged|keyed) failed to list its capabilities/);
      },
    );
  },
);
