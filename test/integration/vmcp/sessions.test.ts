/**
 * Sessions through a virtual workload and the official MCP SDK client: sampling and
 * elicitation asked by a backend reach the client session that caused them, progress reaches
 * the call that asked for it, a cancellation reaches the backend; a backend that stops leaves
 * the lists (list_changed), its calls fail at once while the others keep working, and it comes
 * back when it starts again; a backend that changes its own list is announced.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { test } from 'node:test';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { addGroup, callText, connect, lab, team, toolNames, virtual, waitFor } from './helpers.js';

test(
  'virtual MCP sessions: server requests, progress, cancellation, backends stopping and starting',
  { timeout: 300_000 },
  async (t) => {
    const l = lab(t);
    await addGroup(l, 'ops');
    await team(l, 'alpha', 'ops');
    await team(l, 'beta', 'ops');
    await virtual(l, 'hub', 'ops', { operational: { timeouts: { default: '20s' } } });

    await t.test(
      'sampling and elicitation from a backend reach the calling client session only',
      async (t) => {
        const caps = { sampling: {}, elicitation: {} };
        const a = await connect(t, l.url('hub'), { capabilities: caps });
        const b = await connect(t, l.url('hub'), { capabilities: caps });
        let askedB = 0;
        b.setRequestHandler(CreateMessageRequestSchema, async () => {
          askedB++;
          return { role: 'assistant', content: { type: 'text', text: 'from B' }, model: 'b' };
        });
        a.setRequestHandler(CreateMessageRequestSchema, async (req) => {
          const q = (req.params.messages[0]?.content as { text: string }).text;
          return { role: 'assistant', content: { type: 'text', text: `A says ${q}` }, model: 'a' };
        });
        a.setRequestHandler(ElicitRequestSchema, async (req) => {
          assert.match(req.params.message, /Confirm for beta/);
          return { action: 'accept', content: { ok: true } };
        });
        assert.equal(await callText(a, 'alpha_ask', { question: 'ping?' }), 'alpha heard: A says ping?');
        assert.equal(await callText(a, 'beta_confirm'), 'beta accept {"ok":true}');
        assert.equal(askedB, 0, 'the other session was not asked');
      },
    );

    await t.test(
      'progress is relayed to the call; a cancelled call ends and the session goes on',
      async (t) => {
        const client = await connect(t, l.url('hub'));
        const seen: number[] = [];
        const result = (await client.callTool({ name: 'beta_slow', arguments: { steps: 3 } }, undefined, {
          onprogress: (p) => seen.push(p.progress),
        })) as { content: { text: string }[] };
        assert.equal(result.content[0]?.text, 'beta did 3 steps');
        assert.deepEqual(seen, [1, 2, 3]);

        const abort = new AbortController();
        const call = client.callTool({ name: 'alpha_slow', arguments: { steps: 500 } }, undefined, {
          signal: abort.signal,
          onprogress: () => abort.abort('enough'),
        });
        await assert.rejects(call, /enough|abort/i);
        // The session still works after the cancellation.
        assert.equal(await callText(client, 'alpha_search', { query: 'after' }), 'alpha found after');
      },
    );

    await t.test('a backend that changes its tools is announced (tools/list_changed)', async (t) => {
      const client = await connect(t, l.url('hub'));
      assert.ok(!(await toolNames(client)).includes('alpha_grown'));
      const changed = new Promise<void>((resolve) =>
        client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()),
      );
      assert.equal(await callText(client, 'alpha_grow'), 'grew');
      await changed;
      assert.ok((await toolNames(client)).includes('alpha_grown'));
      assert.equal(await callText(client, 'alpha_grown'), 'grown');
    });

    await t.test('80 client sessions open at once are all served (no per-backend session cap)', async (t) => {
      // Each client session holds a backend session with a standing GET stream open. The
      // streams must not take the connections the calls need: with a fixed 64-connection pool
      // the 65th session's calls waited for a connection until their timeout.
      const clients = await Promise.all(Array.from({ length: 80 }, () => connect(t, l.url('hub'))));
      const answers = await Promise.all(
        clients.map((c, i) => callText(c, 'alpha_search', { query: `s${i}` }).catch((e: Error) => e.message)),
      );
      assert.deepEqual(
        answers,
        clients.map((_, i) => `alpha found s${i}`),
      );
    });

    await t.test(
      'a stopped backend leaves the lists and fails fast; it comes back when started',
      async (t) => {
        const client = await connect(t, l.url('hub'));
        assert.ok((await toolNames(client)).includes('beta_search'));
        let changes = 0;
        const events = new (await import('node:events')).EventEmitter();
        client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
          changes++;
          events.emit('changed');
        });
        await l.stop('beta');
        await once(events, 'changed');
        await waitFor('beta to leave the list', async () =>
          (await toolNames(client)).includes('beta_search') ? undefined : true,
        );
        assert.ok((await toolNames(client)).includes('alpha_search'), 'the other backend stays');
        // A call to the stopped backend's (still routable) name fails fast as a tool error.
        const started = Date.now();
        const result = (await client.callTool({ name: 'alpha_search', arguments: { query: 'still' } })) as {
          content: { text: string }[];
        };
        assert.equal(result.content[0]?.text, 'alpha found still');
        const gone = await client
          .callTool({ name: 'beta_search', arguments: { query: 'x' } })
          .catch((e: Error) => e);
        assert.ok(gone instanceof Error && /Unknown tool/.test(gone.message), String(gone));
        assert.ok(Date.now() - started < 5000, 'no timeout wait');

        await l.run('beta');
        await waitFor('beta to come back', async () =>
          (await toolNames(client)).includes('beta_search') ? true : undefined,
        );
        // The notification travels on the session's GET stream and may follow the list's answer.
        if (changes < 2) await once(events, 'changed');
        assert.ok(changes >= 2, `list_changed on removal and on return (got ${changes})`);
        assert.equal(await callText(client, 'beta_search', { query: 'back' }), 'beta found back');
      },
    );
  },
);
