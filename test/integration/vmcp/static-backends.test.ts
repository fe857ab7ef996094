/**
 * The VirtualMCPServer pod's case: a virtual workload whose config lists static
 * `backends[]` — what the operator writes for a pod, where no store lists the group — serves
 * those backends instead of its group's workloads: a Skep workload's proxy (probed at
 * `/health`) and a remote server reached directly (`type: entry`, probed for any HTTP answer),
 * which demands an API key that only the backend's inline `header_injection` strategy sends.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startKeyedMcpServer } from '../../helpers/keyed-mcp.js';
import { addGroup, callText, connect, lab, team, toolNames, virtual } from './helpers.js';

const API_KEY = 'static-backend-key-41c2';

test(
  'a virtual workload with static backends serves them, with per-backend auth',
  { timeout: 120_000 },
  async (t) => {
    const remote = await startKeyedMcpServer(API_KEY);
    t.after(() => remote.close());
    const l = lab(t);
    await addGroup(l, 'base');
    await addGroup(l, 'hubs');
    await team(l, 'alpha', 'base');
    // `hubs` has no other workload: every backend comes from the list.
    await virtual(
      l,
      'hub',
      'hubs',
      {
        backends: [
          // The URL a client is given for the workload (with its access token).
          { name: 'alpha', url: l.url('alpha'), transport: 'streamable-http' },
          { name: 'remote', url: remote.url, transport: 'streamable-http', type: 'entry' },
        ],
        outgoingAuth: {
          source: 'inline',
          backends: {
            remote: {
              type: 'header_injection',
              headerInjection: { headerName: 'X-Api-Key', headerValueEnv: 'REMOTE_KEY' },
            },
          },
        },
      },
      { env_vars: { REMOTE_KEY: API_KEY } },
    );
    // The runner reports running once the first probes and auth builds are done.
    assert.equal(l.manager.rows.get('hub')?.statusContext, 'serving 2 backends (alpha, remote)');
    const client = await connect(t, l.url('hub'));
    const names = await toolNames(client);
    assert.ok(names.includes('alpha_search') && names.includes('remote_whoami'), names.join(','));
    assert.equal(await callText(client, 'alpha_search', { query: 'q' }), 'alpha found q');
    assert.equal(await callText(client, 'remote_whoami', { who: 'ann' }), 'remote says hi to ann');
    // The health probe reached the entry without the key (any HTTP answer counts); every MCP
    // request carried it.
    assert.ok(remote.seen.includes('GET '), 'the reachability probe reached the remote server');
    const posts = remote.seen.filter((s) => s.startsWith('POST '));
    assert.ok(posts.length >= 2, remote.seen.join(','));
    assert.deepEqual(
      posts.filter((s) => s !== `POST ${API_KEY}`),
      [],
      remote.seen.join(','),
    );
  },
);
