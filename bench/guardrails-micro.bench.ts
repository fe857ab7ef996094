/**
 * In-process CPU of the default guardrails on one 1 KB tool answer, without sockets or
 * child processes (so the figure is stable on a busy machine): builds a request context as
 * the proxy does, lets the guard register its reply hook, and runs the answer's JSON text
 * through the same reply target the stdio bridge uses (`HookedTarget`: parse, hooks,
 * re-serialise when a hook may have changed it). Reports `process.cpuUsage()` per answer,
 * against the same path without guardrails (the answer relayed as its text).
 *
 *   npm run bench -- guardrails-micro
 *   npx tsx bench/guardrails-micro.bench.ts [calls]      (default 100000)
 *
 * GUARDRAILS_MICRO_SECRETS=n adds n own secrets of 32 characters (default 1).
 */
import { parseGuardrailsConfig, Guard } from '../src/dataplane/middleware/guardrails/index.js';
import { HookedTarget } from '../src/dataplane/proxy/reply-hooks.js';
import { newRequestContext } from '../src/dataplane/proxy/request-context.js';
import { countingSink } from './lib/reply-sink.js';

const CALLS = Number(process.argv[2] ?? 100_000);
const SECRETS = Number(process.env['GUARDRAILS_MICRO_SECRETS'] ?? 1);

/** The prose of bench/cpu.bench.ts: no e-mail, card, phone or credential shapes. */
function prose(bytes: number): string {
  const words =
    'the server answered with a list of open issues sorted by age and a short summary of each one ';
  return words.repeat(Math.ceil(bytes / words.length)).slice(0, bytes);
}

const answer = (id: number): string =>
  JSON.stringify({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: prose(1000) }] } });

const secrets = new Map<string, string>();
for (let i = 0; i < SECRETS; i++) secrets.set(`secret_${i}`, `s3cr3t-value-${i}-`.padEnd(32, 'x'));
const guard = new Guard({ config: parseGuardrailsConfig({}), secrets, report: () => undefined });

const { sink, relayed } = countingSink();

const body = {
  jsonrpc: '2.0',
  id: 1,
  method: 'tools/call',
  params: { name: 'echo', arguments: { message: 'x' } },
};
const text = answer(1);

function once(withGuard: boolean): void {
  const built = newRequestContext({
    method: 'POST',
    path: '/mcp',
    body: { json: body },
    serverName: 'bench',
    backendTransport: 'stdio',
  });
  if (withGuard) void guard.handle(built.ctx);
  if (built.replyHooks.length === 0) sink.final(text);
  else new HookedTarget(sink, built.replyHooks, built.replyHooksMutate, built.replyGates).final(text);
}

function measure(label: string, withGuard: boolean): number {
  for (let i = 0; i < 10_000; i++) once(withGuard);
  const start = process.cpuUsage();
  for (let i = 0; i < CALLS; i++) once(withGuard);
  const used = process.cpuUsage(start);
  const us = (used.user + used.system) / CALLS;
  process.stderr.write(`${label}: ${us.toFixed(2)} µs CPU per answer\n`);
  return us;
}

const none = measure('none', false);
const guarded = measure('guardrails', true);
const round = (us: number): number => Math.round(us * 100) / 100;
console.log(
  JSON.stringify({
    calls: CALLS,
    secrets: SECRETS,
    cpu_us_per_1k_answer: { none: round(none), guardrails: round(guarded), added: round(guarded - none) },
    relayed_chars: relayed(),
  }),
);
