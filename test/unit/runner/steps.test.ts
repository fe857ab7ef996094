/**
 * The runner's boot driver: steps start in order, each one's close is kept, a failing step is
 * named in the error, the started steps close newest first, and a close that fails is logged
 * without replacing the failure that caused the closing.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type Step, StepFailedError, Steps } from '../../../src/dataplane/runner/steps.js';
import { createLineLogger, SkepError } from '../../../src/shared/index.js';

function recordingLogger(): {
  logger: ReturnType<typeof createLineLogger>;
  lines: Record<string, unknown>[];
} {
  const lines: Record<string, unknown>[] = [];
  const logger = createLineLogger({
    level: 'debug',
    write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>),
  });
  return { logger, lines };
}

/** A step that notes its start and its close in `events`, or fails with `fails`. */
function step(
  name: string,
  events: string[],
  options: { fails?: Error; closeFails?: Error } = {},
): Step<string[]> {
  return {
    name,
    async start(ctx) {
      ctx.push(`start ${name}`);
      if (options.fails !== undefined) throw options.fails;
      return async () => {
        events.push(`close ${name}`);
        if (options.closeFails !== undefined) throw options.closeFails;
      };
    },
  };
}

test('steps start in order and close newest first, each once', async () => {
  const { logger } = recordingLogger();
  const events: string[] = [];
  const steps = new Steps<string[]>(logger, 'w');
  await steps.start([step('a', events), step('b', events), step('c', events)], events);
  assert.deepEqual(events, ['start a', 'start b', 'start c']);
  await steps.close();
  await steps.close();
  assert.deepEqual(events, ['start a', 'start b', 'start c', 'close c', 'close b', 'close a']);
});

test('a step without a close is skipped when closing', async () => {
  const { logger } = recordingLogger();
  const events: string[] = [];
  const steps = new Steps<string[]>(logger, 'w');
  const checkOnly: Step<string[]> = {
    name: 'check',
    async start(ctx) {
      ctx.push('start check');
    },
  };
  await steps.start([step('a', events), checkOnly, step('b', events)], events);
  await steps.close();
  assert.deepEqual(events, ['start a', 'start check', 'start b', 'close b', 'close a']);
});

test('a failing step is named in the error, keeps its cause, and the started steps close in reverse', async () => {
  const { logger } = recordingLogger();
  const events: string[] = [];
  const steps = new Steps<string[]>(logger, 'w');
  const cause = new Error('port in use');
  const failure = await steps
    .start(
      [
        step('store', events),
        step('pipeline', events),
        step('proxy', events, { fails: cause }),
        step('report', events),
      ],
      events,
    )
    .then(
      () => assert.fail('the boot should have failed'),
      (err: unknown) => err,
    );
  assert.ok(failure instanceof StepFailedError);
  assert.equal(failure.step, 'proxy');
  assert.equal(failure.message, "runner step 'proxy' failed: port in use");
  assert.equal(failure.cause, cause);
  assert.equal(failure.code, 'internal_error', 'a cause without a code is an unexpected failure');
  assert.deepEqual(events, ['start store', 'start pipeline', 'start proxy', 'close pipeline', 'close store']);
  // Everything is closed already: a later shutdown closes nothing twice.
  await steps.close();
  assert.equal(events.filter((e) => e.startsWith('close')).length, 2);
});

test('a close that fails is logged with its step name and does not mask the failure that caused it', async () => {
  const { logger, lines } = recordingLogger();
  const events: string[] = [];
  const steps = new Steps<string[]>(logger, 'w');
  const cause = new Error('bad middleware configuration');
  const failure = await steps
    .start(
      [
        step('session store', events, { closeFails: new Error('redis gone') }),
        step('authorization server', events),
        step('middleware pipeline', events, { fails: cause }),
      ],
      events,
    )
    .then(
      () => assert.fail('the boot should have failed'),
      (err: unknown) => err,
    );
  assert.ok(failure instanceof StepFailedError);
  assert.equal(failure.step, 'middleware pipeline');
  assert.equal(failure.cause, cause);
  assert.equal(failure.code, 'internal_error');
  // The failing close did not stop the ones after it.
  assert.deepEqual(events.slice(-2), ['close authorization server', 'close session store']);
  const warned = lines.filter((l) => l['msg'] === 'closing the session store failed');
  assert.equal(warned.length, 1);
  assert.equal(warned[0]?.['workload'], 'w');
});

test('on shutdown a close that fails is logged and the older steps still close', async () => {
  const { logger, lines } = recordingLogger();
  const events: string[] = [];
  const steps = new Steps<string[]>(logger, 'w');
  await steps.start([step('a', events), step('proxy', events, { closeFails: new Error('busy') })], events);
  await steps.close();
  assert.deepEqual(events.slice(-2), ['close proxy', 'close a']);
  assert.equal(lines.filter((l) => l['msg'] === 'closing the proxy failed').length, 1);
});

test("a failed step's code is its cause's: a SkepError's, or a table code another error class carries", async () => {
  const { logger } = recordingLogger();
  for (const [cause, code] of [
    [new SkepError('invalid_config', 'oidc_config: set issuer'), 'invalid_config'],
    [Object.assign(new Error('too big'), { code: 'payload_too_large' }), 'payload_too_large'],
    [Object.assign(new Error('EADDRINUSE'), { code: 'EADDRINUSE' }), 'internal_error'],
  ] as const) {
    const events: string[] = [];
    const failure = await new Steps<string[]>(logger, 'w')
      .start([step('pipeline', events, { fails: cause })], events)
      .then(
        () => assert.fail('the boot should have failed'),
        (err: unknown) => err,
      );
    assert.ok(failure instanceof StepFailedError);
    assert.equal(failure.code, code, cause.message);
  }
});
