/**
 * The session store's contract (as ToolHive stores sessions): the key prefix rule, the record's
 * JSON shape (what ToolHive's Go `sessionData` writes and reads), the memory store's sliding
 * TTL and its cap, and what the transparent proxy's session routing (`SharedSessions`) does
 * with the store: known and unknown sessions, another proxy's re-initialization taken over,
 * one re-initialization for concurrent 404s, a record naming another server. The clock is
 * frozen; no network.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  checkKeyPrefix,
  decodeSession,
  encodeSession,
  MemorySessionStore,
  SESSION_DEFAULTS,
  type StoredSession,
} from '../../../src/dataplane/proxy/index.js';
import { SharedSessions } from '../../../src/dataplane/proxy/shared-sessions.js';
import { isSkepError, silentLogger } from '../../../src/shared/index.js';

test('key_prefix defaults to thv:proxy:session: and must end with ":" (400 naming the field)', () => {
  assert.equal(SESSION_DEFAULTS.keyPrefix, 'thv:proxy:session:');
  assert.equal(checkKeyPrefix(undefined, 'f'), 'thv:proxy:session:');
  assert.equal(checkKeyPrefix('', 'f'), 'thv:proxy:session:');
  assert.equal(checkKeyPrefix('team-a:sessions:', 'f'), 'team-a:sessions:');
  assert.throws(
    () => checkKeyPrefix('team-a', 'scaling_config.session_redis.key_prefix'),
    (err) =>
      isSkepError(err) &&
      err.code === 'invalid_config' &&
      err.status === 400 &&
      /^scaling_config\.session_redis\.key_prefix "team-a" must end with ':'/.test(err.message),
  );
});

test('a record is the JSON {id, type, created_at, updated_at, data?, metadata?}', () => {
  const record: StoredSession = {
    id: 'abc',
    type: 'mcp',
    created_at: '2026-08-21T10:00:00.000Z',
    updated_at: '2026-08-21T10:05:00.000Z',
    metadata: { backend_url: 'http://127.0.0.1:9/mcp', init_body: '{"jsonrpc":"2.0"}' },
  };
  const json = JSON.parse(encodeSession(record)) as Record<string, unknown>;
  assert.deepEqual(Object.keys(json), ['id', 'type', 'created_at', 'updated_at', 'metadata']);
  assert.deepEqual(decodeSession(encodeSession(record)), record);
  // What the reference writes: Go RFC 3339 with nanoseconds, raw data, string metadata.
  const fromGo =
    '{"id":"s1","type":"streamable","created_at":"2026-08-21T10:00:00.123456789Z","updated_at":"2026-08-21T10:00:01.5+02:00","data":{"k":[1]},"metadata":{"backend_sid":"x"}}';
  assert.deepEqual(decodeSession(fromGo), {
    id: 's1',
    type: 'streamable',
    created_at: '2026-08-21T10:00:00.123456789Z',
    updated_at: '2026-08-21T10:00:01.5+02:00',
    data: { k: [1] },
    metadata: { backend_sid: 'x' },
  });
  // Not a record: treated as no session, never trusted in part.
  for (const bad of [
    'not json',
    '[]',
    'null',
    '{"id":"s","type":"other","created_at":"t","updated_at":"t"}',
    '{"id":"","type":"mcp","created_at":"t","updated_at":"t"}',
    '{"id":"s","type":"mcp","created_at":1,"updated_at":"t"}',
    '{"id":"s","type":"mcp","created_at":"t","updated_at":"t","metadata":{"init_body":{"a":1}}}',
    '{"id":"s","type":"mcp","created_at":"t","updated_at":"t","metadata":["x"]}',
  ])
    assert.equal(decodeSession(bad), undefined, bad);
});

function record(id: string, metadata: Record<string, string> = {}): StoredSession {
  return { id, type: 'mcp', created_at: 't0', updated_at: 't0', metadata };
}

test('memory store: a read restarts the TTL (sliding expiry); expired records are gone; delete', async () => {
  let now = 1_000_000;
  const store = new MemorySessionStore({ ttlMs: 1000, now: () => now });
  await store.save(record('a'));
  now += 900;
  assert.equal((await store.load('a'))?.id, 'a', 'read before expiry, restarting the TTL');
  now += 900;
  assert.equal((await store.load('a'))?.id, 'a', '1.8 s after the write, 0.9 s after the read');
  now += 1000;
  assert.equal(await store.load('a'), undefined, 'expired 1 s after the last read');
  await store.save(record('b'));
  await store.delete('b');
  assert.equal(await store.load('b'), undefined);
});

test('memory store: over its byte cap the least recently used records go first', async () => {
  const size = encodeSession(record('s0')).length;
  const store = new MemorySessionStore({ maxBytes: size * 3 });
  for (const id of ['s0', 's1', 's2']) await store.save(record(id));
  await store.load('s0'); // s1 is now the least recently used
  await store.save(record('s3'));
  assert.equal(store.size, 3);
  assert.equal(await store.load('s1'), undefined);
  for (const id of ['s0', 's2', 's3']) assert.equal((await store.load(id))?.id, id);
});

const UPSTREAM = 'http://127.0.0.1:9/mcp';

function routing(store: MemorySessionStore): SharedSessions {
  return new SharedSessions(store, { upstreamUrl: UPSTREAM, logger: silentLogger, maxCached: 100 });
}

test('routing: an initialized session is recorded with backend_url and init_body, and known to another proxy', async () => {
  const store = new MemorySessionStore();
  const a = routing(store);
  const b = routing(store);
  const init = '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}';
  await a.initialized('client-sid', init);
  const stored = await store.load('client-sid');
  assert.equal(stored?.type, 'mcp');
  assert.deepEqual(stored?.metadata, { backend_url: UPSTREAM, init_body: init });
  const seen = await b.route('client-sid');
  assert.deepEqual([seen.known, seen.backendSid], [true, undefined]);
  assert.equal((await b.route('never-initialized')).known, false);
  // An initialize request too large to replay is not kept (the session still is).
  await a.initialized('big', 'x'.repeat(SESSION_DEFAULTS.maxInitBodyBytes + 1));
  assert.deepEqual((await store.load('big'))?.metadata, { backend_url: UPSTREAM });
});

test('routing: a 404 re-initializes once for concurrent requests; the new backend_sid is stored and used', async () => {
  const store = new MemorySessionStore();
  const a = routing(store);
  await a.initialized('client-sid', '{"init":1}');
  const replayed: string[] = [];
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const reinit = async (body: string): Promise<string> => {
    replayed.push(body);
    await gate;
    return 'backend-2';
  };
  const both = Promise.all([
    a.recover('client-sid', 'client-sid', reinit),
    a.recover('client-sid', 'client-sid', reinit),
  ]);
  release();
  assert.deepEqual(await both, ['backend-2', 'backend-2']);
  assert.deepEqual(replayed, ['{"init":1}'], 'one replay of the stored initialize request');
  assert.equal((await a.route('client-sid')).backendSid, 'backend-2');
  const stored = await store.load('client-sid');
  assert.equal(stored?.metadata?.['backend_sid'], 'backend-2');
  assert.equal(stored?.metadata?.['init_body'], '{"init":1}');
  assert.equal(stored?.created_at, (await store.load('client-sid'))?.created_at);

  // Another proxy that still sent the client's id takes that re-initialization, without one more.
  const b = routing(store);
  const again = await b.recover('client-sid', 'client-sid', async () => assert.fail('no second replay'));
  assert.equal(again, 'backend-2');
  // When the stored backend id fails too, a new one is made.
  assert.equal(await b.recover('client-sid', 'backend-2', async () => 'backend-3'), 'backend-3');
  assert.equal((await store.load('client-sid'))?.metadata?.['backend_sid'], 'backend-3');
});

test('routing: no re-initialization for an unknown session, one without init_body, or a failed replay', async () => {
  const store = new MemorySessionStore();
  const a = routing(store);
  const never = async (): Promise<string> => assert.fail('must not replay');
  assert.equal(await a.recover('unknown', 'unknown', never), undefined);
  await store.save(record('no-body', { backend_url: UPSTREAM }));
  assert.equal(await a.recover('no-body', 'no-body', never), undefined);
  await a.initialized('refused', '{}');
  assert.equal(await a.recover('refused', 'refused', async () => undefined), undefined);
  assert.equal(
    await a.recover('refused', 'refused', async () => {
      throw new Error('server down');
    }),
    undefined,
  );
  assert.equal((await store.load('refused'))?.metadata?.['backend_sid'], undefined);
});

test('routing: a backend_sid recorded for another server is not sent to this one; DELETE forgets the session', async () => {
  const store = new MemorySessionStore();
  await store.save(
    record('s', { backend_url: 'http://10.0.0.5:8080/mcp', backend_sid: 'pod-5-id', init_body: '{}' }),
  );
  const a = routing(store);
  assert.deepEqual([(await a.route('s')).known, (await a.route('s')).backendSid], [true, undefined]);
  // A 404 here re-initializes on this proxy's server and records it as the backend.
  assert.equal(await a.recover('s', 's', async () => 'local-id'), 'local-id');
  assert.deepEqual((await store.load('s'))?.metadata, {
    backend_url: UPSTREAM,
    backend_sid: 'local-id',
    init_body: '{}',
  });
  await a.ended('s');
  assert.equal(await store.load('s'), undefined);
  assert.equal((await a.route('s')).known, false);
});
