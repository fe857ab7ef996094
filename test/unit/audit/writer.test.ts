import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import type { AuditEvent } from '../../../src/dataplane/middleware/audit/event.js';
import {
  type AuditSink,
  AuditWriter,
  loggerSink,
  openAuditFile,
} from '../../../src/dataplane/middleware/audit/writer.js';
import { createLineLogger, isSkepError, type LineLogger, silentLogger } from '../../../src/shared/index.js';

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'skep-audit-writer-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function event(n: number): AuditEvent {
  return {
    audit_id: `id-${n}`,
    type: 'mcp_tool_call',
    logged_at: '2026-01-02T03:04:05.12Z',
    outcome: 'success',
    component: 'c',
    source: { type: 'network', value: '127.0.0.1', extra: {} },
    subjects: { user: 'anonymous' },
    target: { endpoint: '/mcp', method: 'tools/call', type: 'tool' },
  };
}

/** A logger whose lines the test reads back, parsed. */
function capturingLogger(): {
  logger: ReturnType<typeof createLineLogger>;
  lines: Array<Record<string, unknown>>;
} {
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLineLogger({
    write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>),
  });
  return { logger, lines };
}

/** A sink that holds every write until the test releases it (a disk that cannot keep up). */
function stalledSink(): AuditSink & {
  written: AuditEvent[];
  release(): void;
  writes: number;
  /** Settles when the writer first calls the sink. */
  called: Promise<void>;
} {
  let release: () => void = () => {};
  let gate = new Promise<void>((resolve) => (release = resolve));
  let called: () => void = () => {};
  const sink = {
    written: [] as AuditEvent[],
    writes: 0,
    called: new Promise<void>((resolve) => (called = resolve)),
    async write(events: readonly AuditEvent[]) {
      sink.writes++;
      called();
      await gate;
      sink.written.push(...events);
    },
    close() {},
    release() {
      release();
      gate = Promise.resolve();
    },
  };
  return sink;
}

test('the audit file is created with mode 0600 and appended to, one JSON line per event', async (t) => {
  const file = join(tempDir(t), 'audit.log');
  const { logger } = capturingLogger();
  const writer = new AuditWriter({ sink: await openAuditFile(file), logger });
  writer.write(event(1));
  writer.write(event(2));
  await writer.close();
  assert.equal(statSync(file).mode & 0o777, 0o600);
  const again = new AuditWriter({ sink: await openAuditFile(file), logger });
  again.write(event(3));
  await again.close();
  const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
  assert.deepEqual(
    lines.map((l) => (JSON.parse(l) as { audit_id: string }).audit_id),
    ['id-1', 'id-2', 'id-3'],
  );
  assert.equal((JSON.parse(lines[0] ?? '') as { level: string }).level, 'AUDIT');
});

test('the file sink encodes an event as it is queued: no event object waits for the batch', async (t) => {
  const file = join(tempDir(t), 'audit.log');
  const sink = await openAuditFile(file);
  const writer = new AuditWriter({ sink, logger: capturingLogger().logger });
  const first = event(1);
  writer.write(first);
  // Whatever happens to the object afterwards, the line is what the event was when queued.
  first.outcome = 'error';
  first.subjects['user'] = 'changed';
  writer.write(event(2));
  await writer.close();
  const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
  const parsed = lines.map((l) => JSON.parse(l) as { audit_id: string; outcome: string; subjects: object });
  assert.deepEqual(
    parsed.map((e) => [e.audit_id, e.outcome, e.subjects]),
    [
      ['id-1', 'success', { user: 'anonymous' }],
      ['id-2', 'success', { user: 'anonymous' }],
    ],
  );
  assert.ok(Buffer.isBuffer(sink.encode?.(event(3))), 'the queue holds bytes, outside the JS heap');
});

test('an existing file keeps its content: the writer only appends', async (t) => {
  const file = join(tempDir(t), 'audit.log');
  writeFileSync(file, 'earlier line\n', { mode: 0o600 });
  const writer = new AuditWriter({ sink: await openAuditFile(file), logger: capturingLogger().logger });
  writer.write(event(1));
  await writer.close();
  const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
  assert.equal(lines[0], 'earlier line');
  assert.equal(lines.length, 2);
});

test('a file that cannot be opened is a start error naming it', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'missing-dir', 'audit.log');
  await assert.rejects(
    openAuditFile(file),
    (err: unknown) =>
      isSkepError(err) &&
      err.code === 'invalid_path' &&
      err.message.includes(file) &&
      /ENOENT/.test(err.message),
  );
  await assert.rejects(openAuditFile(dir), (err: unknown) => isSkepError(err) && /EISDIR/.test(err.message));
});

test('write() never waits for the disk: it returns before the sink is called', async () => {
  const sink = stalledSink();
  const writer = new AuditWriter({ sink, logger: capturingLogger().logger });
  writer.write(event(1));
  assert.equal(sink.writes, 0, 'nothing is written in the caller’s turn');
  sink.release();
  await writer.close();
  assert.deepEqual(
    sink.written.map((e) => e.audit_id),
    ['id-1'],
  );
});

test('a full queue drops and counts; the count is reported in one WARN line per interval and at close', async () => {
  const sink = stalledSink();
  const { logger, lines } = capturingLogger();
  let now = 1_000_000;
  const writer = new AuditWriter({ sink, logger, maxQueued: 2, dropReportMs: 5000, now: () => now });
  writer.write(event(1));
  // The drain takes event 1 and then waits on the stalled sink.
  await sink.called;
  assert.equal(sink.writes, 1);
  writer.write(event(2));
  writer.write(event(3));
  writer.write(event(4)); // queue holds 2, 3: this one is dropped and reported at once
  writer.write(event(5)); // dropped; the next report waits for the interval
  assert.equal(writer.dropped, 2);
  const warns = () => lines.filter((l) => l['level'] === 40);
  assert.equal(warns().length, 1);
  assert.equal(warns()[0]?.['queue_full'], 1);
  assert.match(String(warns()[0]?.['msg']), /1 events lost \(the queue was full/);
  now += 5000;
  sink.release();
  await writer.close();
  assert.equal(warns().length, 2, 'the drops since the last report are reported at close');
  assert.equal(warns()[1]?.['queue_full'], 1);
  assert.equal(warns()[1]?.['dropped_total'], 2);
  assert.deepEqual(
    sink.written.map((e) => e.audit_id),
    ['id-1', 'id-2', 'id-3'],
  );
});

test('a failed write loses its batch, counted and reported with the error', async () => {
  const { logger, lines } = capturingLogger();
  const sink: AuditSink = {
    write() {
      throw Object.assign(new Error('no space left on device'), { code: 'ENOSPC' });
    },
    close() {},
  };
  const writer = new AuditWriter({ sink, logger });
  writer.write(event(1));
  writer.write(event(2));
  await writer.close();
  assert.equal(writer.dropped, 2);
  const warn = lines.find((l) => l['level'] === 40);
  assert.equal(warn?.['write_failed'], 2);
  assert.equal((warn?.['err'] as { code?: string } | undefined)?.code, 'ENOSPC');
});

test('close() is idempotent and later writes are ignored', async () => {
  const sink = stalledSink();
  sink.release();
  const writer = new AuditWriter({ sink, logger: capturingLogger().logger });
  writer.write(event(1));
  const first = writer.close();
  assert.equal(writer.close(), first);
  await first;
  writer.write(event(2));
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(sink.written.length, 1);
});

test('without logFile: one structured INFO line per event in the runner log, msg audit_event', async () => {
  const { logger, lines } = capturingLogger();
  const writer = new AuditWriter({ sink: loggerSink(logger), logger });
  writer.write(event(7));
  await writer.close();
  assert.equal(lines.length, 1);
  assert.equal(lines[0]?.['level'], 30);
  assert.equal(lines[0]?.['msg'], 'audit_event');
  assert.equal(lines[0]?.['audit_id'], 'id-7');
  assert.equal(lines[0]?.['type'], 'mcp_tool_call');
  assert.deepEqual(lines[0]?.['target'], { endpoint: '/mcp', method: 'tools/call', type: 'tool' });
});

test('without logFile, the runner’s logger: lines made as events are queued, a batch in one write', async () => {
  const chunks: Buffer[] = [];
  const texts: string[] = [];
  let clock = 1_000;
  const logger = createLineLogger({
    name: 'runner:w',
    write: (line) => texts.push(line),
    writeBytes: (chunk) => chunks.push(Buffer.from(chunk)),
    now: () => clock,
  });
  const sink = loggerSink(logger);
  const secretive: AuditEvent = {
    ...event(8),
    data: { request: { name: 'login', arguments: { token: 'abc', Password: 'p' } } },
  };
  const encoded = sink.encode?.(secretive);
  assert.ok(Buffer.isBuffer(encoded), 'the queue holds bytes, outside the JS heap');
  // The very line `logger.info` writes: same fields, order, time and redaction.
  logger.info(secretive, 'audit_event');
  assert.equal(encoded.toString('utf8'), texts[0]);
  assert.match(texts[0]!, /"token":"\[redacted\]","Password":"\[redacted\]"/);
  // Nothing to redact: written as the audit file's line is (its keys in the wire order, here
  // not the order the object was built in), and the same entry as `logger.info` writes.
  const { audit_id, ...rest } = event(9);
  const plain: AuditEvent = {
    ...rest,
    audit_id,
    metadata: { extra: { duration_ms: 3, note: 'a "quoted" line\n' } },
    data: { request: { name: 'echo', arguments: { text: 'say "hi"' } } },
  };
  const fast = sink.encode?.(plain);
  assert.ok(Buffer.isBuffer(fast));
  logger.info(plain, 'audit_event');
  assert.deepEqual(JSON.parse(fast.toString('utf8')), JSON.parse(texts[1]!));
  assert.match(
    fast.toString('utf8'),
    /^\{"level":30,"time":1000,"pid":\d+,"name":"runner:w","audit_id":"id-9","type":.*,"msg":"audit_event"\}\n$/,
  );
  assert.match(texts[1]!, /"name":"runner:w","type":/, 'logger.info keeps the order it was given');
  texts.length = 0;

  const writer = new AuditWriter({ sink, logger: silentLogger });
  writer.write(event(1));
  clock = 2_000; // stamped when queued, not when the batch is written
  writer.write(event(2));
  await writer.close();
  assert.equal(chunks.length, 1, 'the two events of one window: one write');
  assert.deepEqual(texts, [], 'nothing went through the line-at-a-time path');
  const lines = chunks[0]!.toString('utf8').split('\n');
  assert.equal(lines.pop(), '', 'each line ends with a newline');
  const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.deepEqual(
    parsed.map((l) => [l['audit_id'], l['time'], l['level'], l['name'], l['msg']]),
    [
      ['id-1', 1_000, 30, 'runner:w', 'audit_event'],
      ['id-2', 2_000, 30, 'runner:w', 'audit_event'],
    ],
  );
});

test('without logFile: the runner’s logger with info off writes no audit line, as logger.info would not', async () => {
  const chunks: Buffer[] = [];
  const logger = createLineLogger({
    level: 'warn',
    write: () => {},
    writeBytes: (c) => chunks.push(Buffer.from(c)),
  });
  const writer = new AuditWriter({ sink: loggerSink(logger), logger: silentLogger });
  writer.write(event(1));
  await writer.close();
  assert.deepEqual(chunks, []);
});

test('without logFile, a logger that cannot make lines apart: logged one event at a time', async () => {
  const { logger, lines } = capturingLogger();
  const { lines: _made, ...plain }: LineLogger = logger;
  const sink = loggerSink(plain);
  assert.equal(sink.encode, undefined, 'the queue holds the events themselves');
  const writer = new AuditWriter({ sink, logger: silentLogger });
  writer.write(event(1));
  writer.write(event(2));
  await writer.close();
  assert.deepEqual(
    lines.map((l) => [l['audit_id'], l['msg']]),
    [
      ['id-1', 'audit_event'],
      ['id-2', 'audit_event'],
    ],
  );
});

test('events of one batching window share one sink write; close does not wait for the window', async () => {
  const batches: string[][] = [];
  let wrote: () => void = () => {};
  const first = new Promise<void>((resolve) => (wrote = resolve));
  const sink: AuditSink = {
    write(events) {
      batches.push(events.map((e) => e.audit_id));
      wrote();
    },
    close() {},
  };
  const writer = new AuditWriter({ sink, logger: capturingLogger().logger, flushMs: 20 });
  writer.write(event(1));
  // A later request in the same window (a few ms apart, as under load).
  await new Promise((r) => setTimeout(r, 2));
  writer.write(event(2));
  await first;
  assert.deepEqual(batches, [['id-1', 'id-2']]);
  // A window is open again; close writes its event at once instead of waiting out 60 s.
  const slow = new AuditWriter({ sink, logger: capturingLogger().logger, flushMs: 60_000 });
  slow.write(event(3));
  const t0 = Date.now();
  await slow.close();
  assert.ok(Date.now() - t0 < 5_000, 'close flushed without waiting for the window');
  assert.deepEqual(batches, [['id-1', 'id-2'], ['id-3']]);
});

test('events that arrive while an append is in flight wait for a window of their own, then go in one append', async () => {
  const sink = stalledSink();
  const batches: string[][] = [];
  const recording: AuditSink = {
    async write(events) {
      batches.push(events.map((e) => e.audit_id));
      await sink.write(events);
    },
    close() {},
  };
  const writer = new AuditWriter({ sink: recording, logger: capturingLogger().logger, flushMs: 20 });
  writer.write(event(1));
  await sink.called;
  // The first append is in flight: two more events queue behind it.
  writer.write(event(2));
  writer.write(event(3));
  sink.release();
  // A moment after that append completed, as under load: the next one has not started yet.
  await new Promise((r) => setTimeout(r, 2));
  writer.write(event(4));
  await writer.close();
  assert.deepEqual(batches, [['id-1'], ['id-2', 'id-3', 'id-4']]);
});
