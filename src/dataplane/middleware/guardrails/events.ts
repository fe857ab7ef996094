/**
 * The audit event of a guardrails finding, type `guardrails_finding`, in the audit log's wire
 * format (the reference's top-level keys: `audit_id, type, logged_at, outcome, component,
 * source, subjects, target, metadata`). It says which detector found what kind of match, how
 * often and what was done (`metadata.extra.findings`), and never the matched text; for the
 * workload's own secrets it names the secret, not its value.
 *
 * A finding in a message the server sent on its own (a log line, a progress message, a
 * sampling or elicitation request) has target type `server_message`, no subjects and no
 * source address.
 *
 * Outcome: `denied` when the message was blocked (for a finding, or unread for its size:
 * `metadata.extra.oversized` gives its bytes and the limit), else `success` (passed,
 * redacted or not).
 */
import { randomUUID } from 'node:crypto';
import type { AuditEvent } from '../audit/index.js';
import type { FindingReport } from './guard.js';

export const GUARDRAILS_EVENT_TYPE = 'guardrails_finding';

const TARGET_TYPES: Readonly<Record<string, string>> = {
  'tools/call': 'tool',
  'resources/read': 'resource',
  'prompts/get': 'prompt',
};

function claim(claims: Record<string, unknown> | undefined, name: string): string | undefined {
  const v = claims?.[name];
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** `subjects` as the audit log writes them (the caller's `name`, else username, else e-mail). */
function subjectsOf(claims: Record<string, unknown> | undefined): Record<string, string> {
  const subjects: Record<string, string> = {};
  subjects['user'] =
    claim(claims, 'name') ?? claim(claims, 'preferred_username') ?? claim(claims, 'email') ?? 'anonymous';
  const sub = claim(claims, 'sub');
  if (sub !== undefined) subjects['user_id'] = sub;
  return subjects;
}

export function findingEvent(report: FindingReport, component: string, now: () => number): AuditEvent {
  const { ctx, direction, method, inspection, oversized } = report;
  const blocked = inspection.blocked !== undefined || oversized !== undefined;
  // A message the server sent on its own (a notification, a request to the client) has no
  // caller: no endpoint, address or subjects.
  const target: Record<string, string> = ctx === undefined ? { method } : { endpoint: ctx.path, method };
  const name = ctx?.mcp?.resourceId;
  if (name !== undefined && name !== '') target['name'] = name;
  target['type'] = TARGET_TYPES[method] ?? (ctx === undefined ? 'server_message' : 'endpoint');
  const findings = inspection.findings.map((f) => ({
    action: f.action,
    count: f.count,
    detector: f.detector,
    kind: f.kind,
    ...(f.secret === undefined ? {} : { secret: f.secret }),
  }));
  return {
    audit_id: randomUUID(),
    type: GUARDRAILS_EVENT_TYPE,
    logged_at: new Date(now()).toISOString(),
    outcome: blocked ? 'denied' : 'success',
    component,
    source: { type: 'network', value: ctx?.remoteAddress ?? '', extra: {} },
    subjects: ctx === undefined ? {} : subjectsOf(ctx.identity.claims),
    target,
    metadata: {
      extra: {
        blocked,
        direction,
        findings,
        ...(oversized === undefined ? {} : { oversized: { bytes: oversized.bytes, limit: oversized.limit } }),
        redacted: inspection.changed,
      },
    },
  };
}
