// Event numbering and Last-Event-ID replay of SSE outlets, on real HTTP responses (a
// node:http server on loopback; the client reads the raw stream). The event log alone:
// test/unit/proxy/outlets.test.ts.
import assert from 'node:assert/strict';
import { createServer, request, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type TestContext, test } from 'node:test';
import { SSE_HEADERS, SseOutlet } from '../../../src/dataplane/proxy/outlets.js';

/** A loopback server whose requests are handed to the test as open SSE responses. */
async function sseServer(
  t: TestContext,
): Promise<{ open(): Promise<{ res: ServerResponse; body: () => string; cut: () => void }> }> {
  const waiting: Array<(res: ServerResponse) => void> = [];
  const server = createServer((_req, res) => {
    res.writeHead(200, SSE_HEADERS);
    res.flushHeaders();
    waiting.shift()?.(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  const { port } = server.address() as AddressInfo;
  return {
    async open() {
      const got = new Promise<ServerResponse>((resolve) => waiting.push(resolve));
      let text = '';
      const req = request({ host: '127.0.0.1', port, path: '/' }, (incoming) => {
        incoming.setEncoding('utf8');
        incoming.on('data', (d: string) => {
          text += d;
        });
        incoming.on('error', () => undefined);
      });
      req.on('error', () => undefined);
      req.end();
      const res = await got;
      return { res, body: () => text, cut: () => req.destroy() };
    },
  };
}

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(check());
}

test('a reconnected GET stream continues the numbering and replays what followed Last-Event-ID', async (t) => {
  const server = await sseServer(t);
  const first = await server.open();
  const outlet = new SseOutlet(first.res, 1 << 20, 10, () => {});
  outlet.send('{"n":1}');
  outlet.send('{"n":2}');
  await until(() => first.body().includes('{"n":2}'));
  first.cut();
  await until(() => !outlet.open);
  assert.equal(
    outlet.send('{"n":3}'),
    false,
    'a closed stream takes nothing (the bridge routes it elsewhere)',
  );

  const second = await server.open();
  const next = new SseOutlet(second.res, 1 << 20, 10, () => {}, outlet);
  next.replayAfter(1);
  next.send('{"n":4}');
  await until(() => second.body().includes('{"n":4}'));
  // The client saw event 1 only: 2 is replayed with its id, and numbering goes on at 3.
  assert.equal(
    second.body(),
    'id: 2\nevent: message\ndata: {"n":2}\n\n' + 'id: 3\nevent: message\ndata: {"n":4}\n\n',
  );
});

test('legacy SSE outlets (keep 0) carry no ids and replay nothing', async (t) => {
  const server = await sseServer(t);
  const stream = await server.open();
  const outlet = new SseOutlet(stream.res, 1 << 20, 0, () => {});
  outlet.send('{"n":1}');
  outlet.replayAfter(0);
  await until(() => stream.body().includes('{"n":1}'));
  assert.equal(stream.body(), 'event: message\ndata: {"n":1}\n\n');
});
