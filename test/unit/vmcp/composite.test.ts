/**
 * Composite tools at config load: the Go-template subset (rendering as the reference's
 * templates do, errors naming the template and the line:column), and the checks of
 * `compositeTools[]` (graph, upstream reads, type-specific fields, defaults), each an
 * `invalid_config` naming the step.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseVmcpConfig } from '../../../src/dataplane/vmcp/config.js';
import { parseTemplate, type TemplateData } from '../../../src/dataplane/vmcp/composite/template.js';
import { isSkepError } from '../../../src/shared/index.js';

const data: TemplateData = {
  params: { url: 'https://x.test', n: 3, flag: true, list: ['a', 'b'], empty: '' },
  steps: {
    fetch: { status: 'completed', output: { text: '{"user":{"name":"ann"}}', count: 12, items: [1, 2] } },
    skip: { status: 'skipped', output: undefined },
  },
  workflow: { id: 'wf-1', step_count: 2 },
  timestamp: '2026-01-01T00:00:00Z',
};

const render = (src: string, d: TemplateData = data) => parseTemplate(src, 'test').render(d);

test('templates render like the reference: fields, functions, pipes, if/else, trimming', () => {
  assert.equal(render('plain text'), 'plain text');
  assert.equal(render('{{.params.url}}/x'), 'https://x.test/x');
  assert.equal(render('{{.steps.fetch.output.count}}'), '12');
  assert.equal(render('{{.params.missing}}'), '<no value>');
  assert.equal(render('{{json .params.list}}'), '["a","b"]');
  assert.equal(render('{{.params.list | json}}'), '["a","b"]');
  assert.equal(render('{{quote .params.url}}'), '"https://x.test"');
  assert.equal(render('{{(fromJson .steps.fetch.output.text).user.name}}'), 'ann');
  assert.equal(render('{{index .steps "fetch" "output" "count"}}'), '12');
  assert.equal(render('{{index .steps.fetch.output.items 1}}'), '2');
  assert.equal(render('{{len .params.list}}'), '2');
  assert.equal(
    render('{{printf "Found %d items (%s)" (len .steps.fetch.output.items) .params.url}}'),
    'Found 2 items (https://x.test)',
  );
  assert.equal(render('{{if gt .steps.fetch.output.count 10}}big{{else}}small{{end}}'), 'big');
  assert.equal(
    render('{{if ge .steps.fetch.output.count 100.0}}big{{else if .params.flag}}flag{{else}}no{{end}}'),
    'flag',
  );
  assert.equal(render('{{ne .steps.skip.status "completed"}}'), 'true');
  assert.equal(render('{{or .params.empty "fallback"}}'), 'fallback');
  assert.equal(render('{{and .params.flag (eq .params.n 3)}}'), 'true');
  assert.equal(render('{{not .params.flag}}'), 'false');
  assert.equal(render('a  {{- .params.n -}}  b'), 'a3b');
  assert.equal(render('{{/* a comment */}}x'), 'x');
  assert.equal(render('{{.timestamp}}'), '2026-01-01T00:00:00Z');
  assert.equal(render('{{.workflow.id}}'), 'wf-1');
  assert.equal(
    render('{{.steps.fetch.output}}'),
    '{"text":"{\\"user\\":{\\"name\\":\\"ann\\"}}","count":12,"items":[1,2]}',
  );
});

test('template errors name the template and the line:column, at parse time', () => {
  const bad = (src: string, pattern: RegExp) =>
    assert.throws(
      () => parseTemplate(src, 'compositeTools[0].steps[1] (b).arguments.msg'),
      (err: unknown) => isSkepError(err) && err.code === 'invalid_config' && pattern.test(err.message),
      src,
    );
  bad('{{.params.x', /steps\[1\] \(b\)\.arguments\.msg: template error at 1:1: unclosed action/);
  bad('x\n  {{upper .params.x}}', /at 2:5: function "upper" not defined/);
  bad('{{range .params.list}}{{end}}', /"range" is not supported/);
  bad('{{if .params.x}}open', /missing \{\{end\}\}/);
  bad('{{.vars.x}}', /unknown root "\.vars"/);
  bad('{{.forEach.item}}', /only defined inside a forEach step/);
  bad('{{json .steps}}', /name the step/);
  bad('{{$x := 1}}', /variables are not supported/);
  bad('{{.params.a .params.b}}', /non-function/);
  bad('{{end}}', /unexpected \{\{end\}\}/);
});

const tool = (steps: unknown[], extra: Record<string, unknown> = {}) => ({
  compositeTools: [Object.assign({ name: 'wf', description: 'A workflow.', steps }, extra)],
});

function refused(config: unknown, pattern: RegExp): void {
  assert.throws(
    () => parseVmcpConfig(config),
    (err: unknown) => isSkepError(err) && err.code === 'invalid_config' && pattern.test(err.message),
    JSON.stringify(config),
  );
}

test('compositeTools: a valid definition compiles, with the defaults filled', () => {
  const cfg = parseVmcpConfig(
    tool(
      [
        { id: 'a', tool: 'wf.work', arguments: { label: '{{.params.x}}', ms: 1 } },
        { id: 'b', tool: 'wf.work', arguments: { label: 'b', ms: 1 } },
        {
          id: 'c',
          tool: 'everything.echo',
          dependsOn: ['a', 'b'],
          arguments: { message: '{{.steps.a.output.text}} {{.steps.b.output.text}}' },
          onError: { action: 'retry', retryCount: 2, retryDelay: '10ms' },
          timeout: '5s',
        },
      ],
      { timeout: '1m', parameters: { type: 'object', properties: { x: { type: 'string' } } } },
    ),
  );
  const [c] = cfg.composites;
  assert.equal(c?.name, 'wf');
  assert.equal(c?.timeoutMs, 60_000);
  assert.deepEqual(c?.steps[2]?.onError, { action: 'retry', retryCount: 2, retryDelayMs: 10 });
  assert.equal(c?.steps[2]?.timeoutMs, 5000);
  assert.equal(c?.steps[0]?.timeoutMs, 5 * 60_000);
  assert.deepEqual(
    c?.toolRefs.map((r) => r.tool),
    ['wf.work', 'wf.work', 'everything.echo'],
  );
});

test('compositeTools: each problem is invalid_config naming the tool and the step', () => {
  refused(
    tool([
      { id: 'a', tool: 'x', dependsOn: ['b'] },
      { id: 'b', tool: 'x', dependsOn: ['a'] },
    ]),
    /cycle: a → b → a/,
  );
  refused(
    tool([{ id: 'a', tool: 'x', dependsOn: ['nope'] }]),
    /steps\[0\] \(a\)\.dependsOn names unknown step "nope"/,
  );
  refused(
    tool([
      { id: 'a', tool: 'x' },
      { id: 'a', tool: 'y' },
    ]),
    /steps\[1\]\.id "a" is used by steps\[0\]/,
  );
  refused(
    tool([
      { id: 'a', tool: 'x' },
      { id: 'b', tool: 'y', arguments: { m: '{{.steps.a.output.text}}' } },
    ]),
    /steps\[1\] \(b\)\.arguments\.m reads \.steps\.a, which is not upstream of step "b"/,
  );
  refused(tool([{ id: 'b', tool: 'y', arguments: { m: '{{.steps.zz.output}}' } }]), /no step "zz"/);
  refused(
    tool([{ id: 'a', tool: 'x', arguments: { m: '{{bad' } }]),
    /steps\[0\] \(a\)\.arguments\.m: template error at 1:1/,
  );
  refused(tool([{ id: 'a', type: 'elicitation' }]), /steps\[0\] \(a\)\.message is required/);
  refused(tool([{ id: 'a', tool: 'x', message: 'm' }]), /both tool and message/);
  refused(
    tool([{ id: 'a', tool: 'x', collection: '[]' }]),
    /collection has no effect on a step of type "tool"/,
  );
  refused(tool([{ id: 'a', tool: 'x', onError: { action: 'retry' } }]), /retryCount must be at least 1/);
  refused(tool([{ id: 'a', tool: 'x', onError: { action: 'retry', retryCount: 11 } }]), /at most 10/);
  refused(
    tool([{ id: 'a', tool: 'x', onError: { action: 'abort', retryDelay: '1s' } }]),
    /retryDelay has no effect without retries/,
  );
  refused(tool([{ id: 'a', type: 'forEach', collection: '[1]' }]), /step is required for a forEach/);
  refused(
    tool([{ id: 'a', type: 'forEach', collection: '[1]', maxIterations: 1001, step: { tool: 'x' } }]),
    /maxIterations/,
  );
  refused(
    tool([{ id: 'a', type: 'forEach', collection: '[1]', itemVar: 'index', step: { tool: 'x' } }]),
    /reserved/,
  );
  refused(
    tool([
      { id: 'a', tool: 'x', condition: '{{.params.go}}' },
      { id: 'b', tool: 'y', dependsOn: ['a'], arguments: { m: '{{.steps.a.output.text}}' } },
    ]),
    /steps\[0\] \(a\)\.defaultResults\.text is required: the step may be skipped and step "b" reads its output\.text/,
  );
  refused(tool([{ id: 'a', tool: 'x' }], { description: '' }), /description is required/);
  refused(
    tool([{ id: 'a', tool: 'x' }], { parameters: { type: 'string' } }),
    /parameters must be a JSON Schema of type "object"/,
  );
  refused(tool([{ id: 'a', tool: 'x' }], { timeout: 'soon' }), /timeout/);
  refused(
    tool([{ id: 'a', tool: 'x', onDecline: { action: 'abort' } }]),
    /onDecline has no effect on a step of type "tool"/,
  );
  refused(
    tool([{ id: 'a', tool: 'x' }], { output: { properties: { r: { type: 'string' } } } }),
    /needs exactly one of value \(a template\) and properties/,
  );
  refused(
    tool([{ id: 'a', tool: 'x' }], {
      output: { properties: { r: { type: 'string', value: '{{.steps.q.output}}' } } },
    }),
    /output\.properties\.r\.value reads \.steps\.q, and there is no step "q"/,
  );
  refused({ compositeTools: [{ name: 'wf', description: 'd', steps: [] }] }, /steps/);
  assert.throws(
    () => parseVmcpConfig({ compositeToolRefs: [{ name: 'x' }] }),
    (err: unknown) =>
      isSkepError(err) && err.code === 'unsupported_field' && /compositeTools/.test(err.message),
  );
});

test('BackendError carries a Skep error code besides its JSON-RPC code', async () => {
  const { BackendError, BackendHttpError } = await import('../../../src/dataplane/vmcp/backend-client.js');
  const { REQUEST_TIMEOUT, UPSTREAM_UNAVAILABLE } = await import('../../../src/protocol/index.js');
  assert.equal(new BackendError(REQUEST_TIMEOUT, 'slow').errorCode, 'gateway_timeout');
  assert.equal(new BackendError(UPSTREAM_UNAVAILABLE, 'down').errorCode, 'unavailable');
  assert.equal(new BackendError(-32000, 'refused', undefined, true).errorCode, 'unavailable');
  assert.equal(new BackendError(-32602, 'bad params').errorCode, 'bad_gateway');
  assert.equal(new BackendHttpError(403).errorCode, 'unavailable');
});
