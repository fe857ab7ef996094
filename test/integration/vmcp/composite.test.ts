/**
 * Composite tools (the reference's vMCP workflows) through real virtual workloads over real
 * backends (the workflow fixture and server-everything), called with the official MCP SDK
 * client: the DAG runs independent steps in parallel, templates read parameters and step
 * outputs, conditions skip, onError continues/retries/aborts, timeouts bound steps, forEach
 * respects maxParallel, elicitation asks the client, progress is reported, cancellation stops
 * what is pending, hidden tools are callable, each inner call is authorized (Cedar) and
 * audited like a direct call, a step naming an unknown tool stops the virtual workload from
 * starting, and the run, its elicitation and forEach steps are spans around the inner calls'.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { tempHome } from '../../helpers/home.js';
import { OtlpReceiver } from '../../helpers/otlp.js';
import { runInProcess } from '../workloads/helpers.js';
import { addGroup, connect, everything, type Lab, lab, virtual, waitFor } from './helpers.js';

const WF_SERVER = fileURLToPath(new URL('../../fixtures/vmcp-workflow/server.ts', import.meta.url));
const TSX = import.meta.resolve('tsx');

async function workflowBackend(l: Lab, name: string, group: string): Promise<void> {
  await l.manager.create({
    name,
    group,
    image: `cmd://${process.execPath}`,
    cmd_arguments: ['--import', TSX, WF_SERVER, name],
  });
  await l.run(name);
}

interface Result {
  content: Array<{ type: string; text: string }>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<Result> {
  return (await client.callTool({ name, arguments: args })) as Result;
}

async function stats(
  client: Client,
): Promise<{ max: number; calls: number; cancelled: number; started: string[] }> {
  const r = await call(client, 'wf_stats', { reset: true });
  return r.structuredContent as { max: number; calls: number; cancelled: number; started: string[] };
}

const work = (label: string, ms = 150) => ({ tool: 'wf.work', arguments: { label, ms } });

const COMPOSITES: Array<Record<string, unknown> & { name: string }> = [
  {
    name: 'dag',
    description: 'Two parallel steps, then one that reads both.',
    parameters: { type: 'object', properties: { who: { type: 'string' } }, required: ['who'] },
    steps: [
      { id: 'a', ...work('a', 300) },
      { id: 'b', ...work('b', 300) },
      {
        id: 'c',
        tool: 'everything.echo',
        dependsOn: ['a', 'b'],
        arguments: { message: '{{.steps.a.output.text}} + {{.steps.b.output.text}} for {{.params.who}}' },
      },
    ],
  },
  {
    name: 'structured',
    description: 'Structured outputs, coercion and an output template.',
    parameters: { type: 'object', properties: { id: { type: 'integer' } } },
    steps: [
      { id: 'u', tool: 'wf_user', arguments: { id: '{{.params.id}}' } },
      { id: 'sum', tool: 'wf.add', arguments: { a: '100', b: '{{.params.id}}' } },
    ],
    output: {
      properties: {
        name: { type: 'string', description: 'User name', value: '{{.steps.u.output.user.name}}' },
        total: { type: 'integer', value: '{{.steps.sum.output.result}}' },
        tags: { type: 'array', value: '{{json .steps.u.output.tags}}' },
        missing: { type: 'string', value: '{{.steps.u.output.nothing}}', default: 'fallback' },
      },
      required: ['name', 'total'],
    },
  },
  {
    name: 'conditional',
    description: 'A step skipped by its condition; the next reads its defaults.',
    parameters: { type: 'object', properties: { go: { type: 'boolean' } } },
    steps: [
      {
        id: 'maybe',
        ...work('maybe', 1),
        condition: '{{if .params.go}}true{{else}}false{{end}}',
        defaultResults: { text: 'skipped-default' },
      },
      {
        id: 'after',
        tool: 'everything.echo',
        dependsOn: ['maybe'],
        arguments: { message: '{{.steps.maybe.status}}: {{.steps.maybe.output.text}}' },
      },
    ],
  },
  {
    name: 'errors',
    description: 'continue with defaults, then retry until the backend answers.',
    parameters: { type: 'object', properties: { key: { type: 'string' } } },
    steps: [
      { id: 'broken', tool: 'wf.fail', onError: { action: 'continue' }, defaultResults: { text: 'default' } },
      {
        id: 'retried',
        tool: 'wf.flaky',
        dependsOn: ['broken'],
        arguments: { key: '{{.params.key}}', failures: 2 },
        onError: { action: 'retry', retryCount: 2, retryDelay: '20ms' },
      },
      {
        id: 'report',
        tool: 'everything.echo',
        dependsOn: ['retried'],
        arguments: {
          message: '{{.steps.broken.status}}/{{.steps.broken.output.text}}/{{.steps.retried.output.text}}',
        },
      },
    ],
  },
  {
    name: 'aborts',
    description: 'The first step fails: nothing after it runs.',
    steps: [
      { id: 'broken', tool: 'wf.fail' },
      { id: 'never', ...work('never', 1), dependsOn: ['broken'] },
    ],
  },
  {
    name: 'retries_out',
    description: 'Retries run out.',
    parameters: { type: 'object', properties: { key: { type: 'string' } } },
    steps: [
      {
        id: 'r',
        tool: 'wf.flaky',
        arguments: { key: '{{.params.key}}', failures: 5 },
        onError: { action: 'retry', retryCount: 1, retryDelay: '10ms' },
      },
    ],
  },
  {
    name: 'slow_step',
    description: 'A step longer than its timeout.',
    steps: [{ id: 'slow', tool: 'wf.sleep', arguments: { ms: 5000 }, timeout: '300ms' }],
  },
  {
    name: 'slow_tool',
    description: 'A composite longer than its own timeout.',
    timeout: '300ms',
    steps: [{ id: 'slow', tool: 'wf.sleep', arguments: { ms: 5000 } }],
  },
  {
    name: 'fan_out',
    description: 'forEach over the packages, two at a time.',
    parameters: { type: 'object', properties: { n: { type: 'integer' } } },
    steps: [
      { id: 'list', tool: 'wf.packages', arguments: { n: '{{.params.n}}' } },
      {
        id: 'each',
        type: 'forEach',
        dependsOn: ['list'],
        collection: '{{json .steps.list.output.packages}}',
        itemVar: 'pkg',
        maxParallel: 2,
        maxIterations: 10,
        step: {
          tool: 'wf.work',
          arguments: { label: '{{.forEach.pkg.name}}@{{.forEach.pkg.version}}#{{.forEach.index}}', ms: 100 },
        },
      },
    ],
    output: {
      properties: {
        count: { type: 'integer', value: '{{.steps.each.output.count}}' },
        completed: { type: 'integer', value: '{{.steps.each.output.completed}}' },
        first: { type: 'string', value: '{{(index .steps.each.output.iterations 0).output.text}}' },
      },
    },
  },
  {
    name: 'ask',
    description: 'Asks the user, then echoes the answer.',
    steps: [
      {
        id: 'confirm',
        type: 'elicitation',
        message: 'Deploy {{.params.app}}?',
        schema: { type: 'object', properties: { proceed: { type: 'boolean' } }, required: ['proceed'] },
        onDecline: { action: 'skip_remaining' },
        onCancel: { action: 'abort' },
      },
      {
        id: 'deploy',
        tool: 'everything.echo',
        dependsOn: ['confirm'],
        arguments: { message: 'proceed={{.steps.confirm.output.content.proceed}}' },
      },
    ],
    parameters: { type: 'object', properties: { app: { type: 'string' } } },
  },
  {
    name: 'cancellable',
    description: 'A quick step, a slow one, then one that must never run once cancelled.',
    steps: [
      { id: 'quick', ...work('quick', 1) },
      { id: 'slow', tool: 'wf.sleep', arguments: { ms: 10000 }, dependsOn: ['quick'] },
      { id: 'last', ...work('last', 1), dependsOn: ['slow'] },
    ],
  },
  {
    name: 'hidden_call',
    description: 'Calls a tool that tools/list does not show.',
    steps: [{ id: 'h', tool: 'wf.destroy' }],
  },
  {
    name: 'read_only',
    description: 'Reads only.',
    steps: [{ id: 'u', tool: 'wf.user', arguments: { id: 1 } }],
  },
  {
    name: 'claims_read_only',
    description: 'Claims read-only but destroys.',
    annotations: { readOnlyHint: true },
    steps: [{ id: 'd', tool: 'wf.destroy' }],
  },
  {
    name: 'denied_inner',
    description: 'Its second step is forbidden by the policy.',
    steps: [
      { id: 'ok', ...work('allowed', 1) },
      { id: 'forbidden', tool: 'wf.add', arguments: { a: 1, b: 2 }, dependsOn: ['ok'] },
    ],
  },
];

const VMCP = {
  compositeTools: COMPOSITES,
  // `destroy` is not advertised: composites still call it (hidden tools stay routable).
  aggregation: {
    tools: [
      { workload: 'wf', filter: ['work', 'stats', 'fail', 'flaky', 'user', 'add', 'packages', 'sleep'] },
    ],
  },
};

test('composite tools over real backends', { timeout: 600_000 }, async (t) => {
  const l = lab(t);
  await addGroup(l, 'wfg');
  await workflowBackend(l, 'wf', 'wfg');
  await everything(l, 'everything', 'wfg');
  await virtual(l, 'v-wf', 'wfg', VMCP);
  const client = await connect(t, l.url('v-wf'));
  await stats(client);

  await t.test(
    'advertised with its parameters, output schema and derived annotations; a contradiction is dropped',
    async () => {
      const tools = (await client.listTools()).tools;
      const byName = new Map(tools.map((x) => [x.name, x]));
      assert.deepEqual(byName.get('dag')?.inputSchema, COMPOSITES[0]!.parameters);
      assert.equal(byName.get('structured')?.outputSchema?.['type'], 'object');
      assert.deepEqual(byName.get('read_only')?.annotations, {
        readOnlyHint: true,
        destructiveHint: false,
        idempotentHint: true,
        openWorldHint: false,
      });
      // wf.fail declares no annotations: the floor is tainted.
      assert.deepEqual(byName.get('aborts')?.annotations, {
        readOnlyHint: false,
        destructiveHint: true,
        idempotentHint: false,
        openWorldHint: true,
      });
      assert.equal(byName.get('hidden_call')?.annotations?.destructiveHint, true);
      assert.ok(!byName.has('claims_read_only'), 'an explicit hint safer than the steps drops the tool');
      assert.ok(!byName.has('wf_destroy'), 'the filtered tool is not listed');
    },
  );

  await t.test(
    'a three-step DAG: the independent pair runs in parallel, the third reads both and the parameters',
    async () => {
      const r = await call(client, 'dag', { who: 'ann' });
      assert.equal(r.isError, undefined, JSON.stringify(r));
      assert.equal(r.content[0]?.text, 'Echo: done a + done b for ann');
      const s = await stats(client);
      assert.equal(s.max, 2, 'a and b overlapped');
      assert.deepEqual([...s.started].sort(), ['a', 'b']);
    },
  );

  await t.test(
    'structured outputs, string arguments coerced to the schema, output templates with defaults',
    async () => {
      const r = await call(client, 'structured', { id: 7 });
      assert.equal(r.isError, undefined, JSON.stringify(r));
      assert.deepEqual(r.structuredContent, {
        name: 'user-7',
        total: 107,
        tags: ['a', 'b'],
        missing: 'fallback',
      });
      assert.deepEqual(JSON.parse(r.content[0]!.text), r.structuredContent);
    },
  );

  await t.test('condition false skips the step; its defaultResults stand in', async () => {
    assert.equal(
      (await call(client, 'conditional', { go: false })).content[0]?.text,
      'Echo: skipped: skipped-default',
    );
    assert.equal(
      (await call(client, 'conditional', { go: true })).content[0]?.text,
      'Echo: completed: done maybe',
    );
  });

  await t.test('onError: continue (defaults), retry until it answers, abort stops the rest', async () => {
    const r = await call(client, 'errors', { key: 'k1' });
    assert.equal(r.content[0]?.text, 'Echo: failed/default/ok after 3');
    const aborted = await call(client, 'aborts');
    assert.equal(aborted.isError, true);
    assert.match(
      aborted.content[0]!.text,
      /Workflow execution failed: step broken: tool wf\.fail failed: boom/,
    );
    const out = await call(client, 'retries_out', { key: 'k2' });
    assert.equal(out.isError, true);
    assert.match(out.content[0]!.text, /flaky failure 2 \(after 2 attempts\)/);
    const s = await stats(client);
    assert.ok(!s.started.includes('never'), 'the step after the failure never ran');
  });

  await t.test('timeouts: a step past its timeout, a composite past its own', async () => {
    const step = await call(client, 'slow_step');
    assert.equal(step.isError, true);
    assert.match(step.content[0]!.text, /did not answer within its step timeout \(300 ms\)/);
    const whole = await call(client, 'slow_tool');
    assert.equal(whole.isError, true);
    assert.match(whole.content[0]!.text, /Workflow execution timeout exceeded/);
    // The abandoned backend calls were cancelled at the backend.
    await waitFor('the backend to see both cancellations', async () =>
      (await stats(client)).cancelled >= 2 ? true : undefined,
    );
  });

  await t.test('forEach with maxParallel 2: every item runs, never more than two at once', async () => {
    await stats(client);
    const r = await call(client, 'fan_out', { n: 6 });
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.deepEqual(r.structuredContent, { count: 6, completed: 6, first: 'done pkg0@1.0#0' });
    const s = await stats(client);
    assert.equal(s.max, 2, `observed concurrency ${s.max}`);
    assert.equal(s.calls, 6);
    const tooMany = await call(client, 'fan_out', { n: 11 });
    assert.equal(tooMany.isError, true);
    assert.match(tooMany.content[0]!.text, /11 items, more than maxIterations 10/);
  });

  await t.test('progress: one notification per step when the client sent a progress token', async () => {
    const seen: Array<{ progress: number; total?: number | undefined; message?: string | undefined }> = [];
    await client.callTool({ name: 'dag', arguments: { who: 'p' } }, undefined, {
      onprogress: (p) => seen.push(p),
    });
    assert.deepEqual(
      seen.map((p) => [p.progress, p.total]),
      [
        [1, 3],
        [2, 3],
        [3, 3],
      ],
    );
    assert.match(seen[2]!.message ?? '', /step c completed/);
  });

  await t.test(
    'cancellation stops the running step at its backend and the pending one never starts',
    async () => {
      await stats(client);
      const abort = new AbortController();
      const pending = client.callTool({ name: 'cancellable', arguments: {} }, undefined, {
        signal: abort.signal,
        // The first step's progress is the barrier: the slow step starts right after it.
        onprogress: (p) => {
          if (p.progress === 1) setTimeout(() => abort.abort('stop'), 100);
        },
      });
      await assert.rejects(pending);
      await waitFor('the backend to see the cancellation', async () => {
        const s = await call(client, 'wf_stats');
        return (s.structuredContent as { cancelled: number }).cancelled >= 1 ? true : undefined;
      });
      const s = await stats(client);
      assert.deepEqual(s.started, ['quick', 'sleep'], 'the last step never started');
    },
  );

  await t.test('a composite calls a filtered (hidden) tool', async () => {
    const r = await call(client, 'hidden_call');
    assert.equal(r.content[0]?.text, 'destroyed');
  });

  await t.test('elicitation: accepted, declined (skip_remaining), cancelled (abort)', async (t) => {
    const answers: Array<Record<string, unknown>> = [];
    const asking = await connect(t, l.url('v-wf'), { capabilities: { elicitation: {} } });
    const messages: string[] = [];
    asking.setRequestHandler(ElicitRequestSchema, async (req) => {
      messages.push(req.params.message);
      return answers.shift() as never;
    });
    answers.push({ action: 'accept', content: { proceed: true } });
    assert.equal((await call(asking, 'ask', { app: 'api' })).content[0]?.text, 'Echo: proceed=true');
    assert.deepEqual(messages, ['Deploy api?']);
    answers.push({ action: 'decline' });
    const declined = await call(asking, 'ask', { app: 'api' });
    assert.equal(declined.isError, undefined);
    assert.deepEqual(JSON.parse(declined.content[0]!.text), { action: 'decline', skipped: true });
    answers.push({ action: 'cancel' });
    const cancelled = await call(asking, 'ask', { app: 'api' });
    assert.equal(cancelled.isError, true);
    assert.match(cancelled.content[0]!.text, /the user cancelled the elicitation/);
  });
  await t.test(
    "elicitation from an SDK client without the capability: the composite's own error names the tool and the step",
    async () => {
      const plain = await call(client, 'ask', { app: 'api' });
      assert.equal(plain.isError, true);
      assert.equal(
        plain.content[0]!.text,
        'Workflow execution failed: step confirm of composite tool ask: the client did not declare the elicitation capability, so it cannot be asked; call this tool from a client that supports elicitation',
      );
    },
  );
  await t.test(
    're-checked when backends change: a composite whose tool left is withheld, and back when it returns',
    async () => {
      await l.stop('everything');
      await waitFor('dag to be withheld', async () => {
        const names = (await client.listTools()).tools.map((x) => x.name);
        return !names.includes('dag') && names.includes('fan_out') ? true : undefined;
      });
      const status = await waitFor('the status to say why', () => {
        const context = l.manager.rows.get('v-wf')?.statusContext ?? '';
        return context.includes('withheld') ? context : undefined;
      });
      assert.match(
        status,
        /withheld: vmcp\.compositeTools\[0\] \(dag\) step "c": tool "everything\.echo" is not among the backends' tools/,
      );
      const r = await call(client, 'dag', { who: 'x' });
      assert.equal(r.isError, true);
      assert.match(r.content[0]!.text, /composite tool dag cannot run: .*everything\.echo/);
      await l.run('everything');
      await waitFor('dag to be back', async () =>
        (await client.listTools()).tools.some((x) => x.name === 'dag') ? true : undefined,
      );
    },
  );
});

test('each inner call is authorized and audited like a direct call', { timeout: 300_000 }, async (t) => {
  const l = lab(t);
  const dir = tempHome(t, 'skep-composite-audit-').dir;
  const file = join(dir, 'audit.log');
  await addGroup(l, 'wfa');
  await workflowBackend(l, 'wf', 'wfa');
  // A virtual workload with a policy and an audit log: its run configuration, imported.
  await l.manager.create({
    name: 'v-base',
    group: 'wfa',
    vmcp: {
      compositeTools: COMPOSITES.filter((c) => c.name === 'denied_inner' || c.name === 'read_only'),
    } as never,
  });
  await l.manager.createFromConfig(
    Object.assign({}, l.manager.exportConfig('v-base'), {
      authz_config: {
        version: '1.0',
        type: 'cedarv1',
        cedar: {
          policies: [
            'permit(principal, action == Action::"call_tool", resource == Tool::"denied_inner");',
            'permit(principal, action == Action::"call_tool", resource == Tool::"read_only");',
            'permit(principal, action == Action::"call_tool", resource == Tool::"wf_work");',
            'permit(principal, action == Action::"call_tool", resource == Tool::"wf_user");',
            'permit(principal, action == Action::"list_tools", resource);',
          ],
        },
      },
      audit_config: { logFile: file },
    }),
    { name: 'v-authz' },
  );
  await l.run('v-authz');
  const client = await connect(t, l.url('v-authz'));
  const denied = await call(client, 'denied_inner');
  assert.equal(denied.isError, true);
  assert.match(
    denied.content[0]!.text,
    /step forbidden: the call to wf_add was refused \(HTTP 403: Unauthorized\)/,
  );
  const ok = await call(client, 'read_only');
  assert.equal(ok.isError, undefined, JSON.stringify(ok));

  await waitFor('the audit events', () => {
    const lines = readFileSync(file, 'utf8')
      .split('\n')
      .filter((x) => x.includes('mcp_tool_call'));
    return lines.length >= 5 ? lines : undefined;
  });
  const events = readFileSync(file, 'utf8')
    .split('\n')
    .filter((x) => x.includes('"mcp_tool_call"'))
    .map(
      (x) =>
        JSON.parse(x) as {
          outcome: string;
          target: Record<string, string>;
          source: { extra: Record<string, string> };
        },
    );
  const byTool = (name: string) => events.filter((e) => e.target['name'] === name);
  const outer = byTool('denied_inner')[0]!;
  const link = outer.source.extra['request_id'];
  assert.ok(link !== undefined && link !== '', 'the composite call has a request id');
  const inner = events.filter((e) => e.source.extra['request_id'] === link && e !== outer);
  assert.deepEqual(inner.map((e) => [e.target['name'], e.outcome]).sort(), [
    ['wf_add', 'denied'],
    ['wf_work', 'success'],
  ]);
  const second = byTool('read_only')[0]!;
  const innerUser = byTool('wf_user')[0]!;
  assert.equal(innerUser.source.extra['request_id'], second.source.extra['request_id']);
  assert.notEqual(second.source.extra['request_id'], link);
});

test(
  'a step that names a tool no backend offers stops the virtual workload at start, naming the step',
  { timeout: 120_000 },
  async (t) => {
    const l = lab(t);
    await addGroup(l, 'wfu');
    // Created while the backend has not reported its tools: the create-time check leaves the
    // step to the start (composite-config-check.test.ts covers the create-time refusal).
    await l.manager.create({
      name: 'wf',
      group: 'wfu',
      image: `cmd://${process.execPath}`,
      cmd_arguments: ['--import', TSX, WF_SERVER, 'wf'],
    });
    await l.manager.create({
      name: 'v-unknown',
      group: 'wfu',
      vmcp: {
        compositeTools: [
          { name: 'bad', description: 'Names a missing tool.', steps: [{ id: 'x', tool: 'wf.nope' }] },
        ],
      },
    });
    await l.run('wf');
    const abort = new AbortController();
    const done = runInProcess(l.ctx, 'v-unknown', abort.signal);
    t.after(() => abort.abort());
    const context = await waitFor('v-unknown to fail', () => {
      const row = l.manager.rows.get('v-unknown');
      return row?.status === 'error' ? row.statusContext : undefined;
    });
    assert.match(
      context ?? '',
      /compositeTools\[0\] \(bad\) step "x": tool "wf\.nope" is not among the backends' tools/,
    );
    assert.notEqual(await done, 0);
  },
);

test(
  'telemetry: the composite run is a span under its call, elicitation and forEach steps spans under it, inner calls under those',
  { timeout: 180_000 },
  async (t) => {
    const receiver = await OtlpReceiver.start();
    t.after(() => receiver.close());
    const l = lab(t);
    await addGroup(l, 'wft');
    await workflowBackend(l, 'wf', 'wft');
    await everything(l, 'everything', 'wft');
    await l.manager.create({
      name: 'v-base',
      group: 'wft',
      vmcp: Object.assign({}, VMCP, {
        compositeTools: COMPOSITES.filter((c) => ['dag', 'fan_out', 'ask'].includes(c.name)),
      }) as never,
    });
    await l.manager.createFromConfig(
      Object.assign({}, l.manager.exportConfig('v-base'), {
        telemetry_config: {
          endpoint: receiver.endpoint,
          insecure: true,
          samplingRate: '1',
          metricsEnabled: false,
        },
      }),
      { name: 'v-traced' },
    );
    await l.run('v-traced');
    const client = await connect(t, l.url('v-traced'), { capabilities: { elicitation: {} } });
    const answers: Array<Record<string, unknown>> = [
      { action: 'accept', content: { proceed: true } },
      { action: 'cancel' },
    ];
    client.setRequestHandler(ElicitRequestSchema, async () => answers.shift() as never);
    assert.equal((await call(client, 'dag', { who: 'span' })).isError, undefined);
    assert.equal((await call(client, 'fan_out', { n: 3 })).isError, undefined);
    assert.equal((await call(client, 'ask', { app: 'api' })).isError, undefined);
    assert.equal((await call(client, 'ask', { app: 'web' })).isError, true);

    type Span = ReturnType<OtlpReceiver['spans']>[number];
    const childrenOf = (spans: Span[], parent: Span) => spans.filter((s) => s.parentSpanId === parent.spanId);
    // Every span of the four calls: 4 requests, 4 runs, 1 forEach and 2 elicitation steps, 8 inner calls.
    const outer = new Set(['tools/call dag', 'tools/call fan_out', 'tools/call ask']);
    const spans = await receiver.waitFor('the spans of the four composite calls', () => {
      const all = receiver.spans();
      const requests = all.filter((s) => outer.has(s.name)).length;
      const work = all.filter((s) => s.name.startsWith('workflow')).length;
      const inner = all.filter((s) => s.name.startsWith('tools/call ') && !outer.has(s.name)).length;
      return requests >= 4 && work >= 7 && inner >= 8 ? all : undefined;
    });
    const runsOf = (tool: string) => {
      const calls = spans.filter((s) => s.name === `tools/call ${tool}`);
      return calls.map((request) => {
        const [run, ...others] = childrenOf(spans, request);
        assert.equal(others.length, 0, `the ${tool} request has one child, its run`);
        assert.equal(run?.name, `workflow ${tool}`);
        assert.equal(run.kind, 1, 'INTERNAL');
        assert.equal(run.traceId, request.traceId);
        assert.equal(run.attributes['workflow.name'], tool);
        assert.match(String(run.attributes['workflow.id']), /^wf-/);
        return run;
      });
    };

    // dag: its three tool steps are inner calls (SERVER spans of the pipeline) under the run.
    const [dag] = runsOf('dag');
    assert.equal(dag?.attributes['workflow.status'], 'completed');
    assert.equal(dag?.attributes['workflow.step_count'], 3);
    assert.deepEqual(dag?.status, { code: 1, message: '' });
    assert.deepEqual(
      childrenOf(spans, dag)
        .map((s) => s.name)
        .sort(),
      ['tools/call everything_echo', 'tools/call wf_work', 'tools/call wf_work'],
    );

    // fan_out: the list step under the run; the forEach step a span whose children are its iterations.
    const [fan] = runsOf('fan_out');
    const fanChildren = childrenOf(spans, fan!);
    assert.deepEqual(fanChildren.map((s) => s.name).sort(), ['tools/call wf_packages', 'workflow.step each']);
    const each = fanChildren.find((s) => s.name === 'workflow.step each')!;
    assert.equal(each.kind, 1);
    assert.deepEqual(each.attributes, {
      'workflow.step.id': 'each',
      'workflow.step.type': 'forEach',
      'workflow.step.iterations': 3,
      'workflow.step.completed': 3,
      'workflow.step.failed': 0,
      'workflow.step.status': 'completed',
    });
    assert.deepEqual(each.status, { code: 1, message: '' });
    const iterations = childrenOf(spans, each);
    assert.deepEqual(
      iterations.map((s) => s.name),
      ['tools/call wf_work', 'tools/call wf_work', 'tools/call wf_work'],
    );

    // ask: accepted, then cancelled (onCancel abort): the step's span says which, the run fails.
    const asks = runsOf('ask');
    assert.equal(asks.length, 2);
    const steps = asks.map((run) => {
      const step = childrenOf(spans, run).find((s) => s.name === 'workflow.step confirm');
      assert.ok(step, 'the elicitation step has a span under its run');
      return { run, step };
    });
    const accepted = steps.find((x) => x.step.attributes['workflow.step.action'] === 'accept')!;
    const cancelled = steps.find((x) => x.step.attributes['workflow.step.action'] === 'cancel')!;
    assert.deepEqual(accepted.step.attributes, {
      'workflow.step.id': 'confirm',
      'workflow.step.type': 'elicitation',
      'workflow.step.action': 'accept',
      'workflow.step.status': 'completed',
    });
    assert.equal(accepted.run.attributes['workflow.status'], 'completed');
    assert.deepEqual(
      childrenOf(spans, accepted.run)
        .map((s) => s.name)
        .sort(),
      ['tools/call everything_echo', 'workflow.step confirm'],
    );
    assert.equal(cancelled.step.attributes['workflow.step.status'], 'failed');
    assert.equal(cancelled.step.status.code, 2);
    assert.match(cancelled.step.status.message, /the user cancelled the elicitation/);
    assert.equal(cancelled.run.attributes['workflow.status'], 'failed');
    assert.equal(cancelled.run.status.code, 2);
    assert.deepEqual(
      childrenOf(spans, cancelled.run).map((s) => s.name),
      ['workflow.step confirm'],
      'the step after the abort never ran',
    );
  },
);
