/**
 * The web UI's workload types (src/control/ui/types.ts) mirror the API's TypeBox schemas, because the
 * schemas' module graph cannot be type-checked with the browser's DOM types. This file is
 * where the two meet: `npm run typecheck` fails when a server object no longer fits what the
 * UI reads, or a UI request no longer fits what the API accepts; the test fails when the UI
 * names a field the schema does not have.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type * as Ui from '../../../src/control/ui/types.js';
import {
  type CreateWorkloadRequest,
  type UpdateWorkloadRequest,
  type WorkloadDetail,
  WorkloadDetailSchema,
  type WorkloadSummary,
  WorkloadSummarySchema,
} from '../../../src/schemas/index.js';

/** Compiles only when A is assignable to B. */
type Fits<A extends B, B> = A extends B ? true : never;

const proofs: [
  Fits<WorkloadSummary, Ui.WorkloadSummary>,
  Fits<WorkloadDetail, Ui.WorkloadDetail>,
  Fits<Ui.CreateWorkloadRequest, CreateWorkloadRequest>,
  Fits<Ui.UpdateWorkloadRequest, UpdateWorkloadRequest>,
] = [true, true, true, true];

const summaryKeys = {
  name: true,
  package: true,
  group: true,
  port: true,
  proxy_mode: true,
  remote: true,
  url: true,
  tools: true,
  transport_type: true,
  status: true,
  status_context: true,
  created_at: true,
  started_at: true,
  sandboxed: true,
  sandbox: true,
  network: true,
  endpoint_access: true,
  guardrails: true,
} satisfies Record<keyof Ui.WorkloadSummary, true>;

const detailKeys = {
  name: true,
  image: true,
  host: true,
  group: true,
  url: true,
  transport: true,
  proxy_mode: true,
  authz_config: true,
  cmd_arguments: true,
  tools: true,
  env_vars: true,
  proxy_port: true,
  secrets: true,
  status: true,
  status_context: true,
  sandboxed: true,
  sandbox: true,
  sandbox_reason: true,
  network: true,
  network_detail: true,
  endpoint_access: true,
  guardrails: true,
  autostart: true,
} satisfies Record<keyof Ui.WorkloadDetail, true>;

test('every workload field the UI reads is a field of the API schema (and required there)', () => {
  assert.deepEqual(proofs, [true, true, true, true]);
  const cases: Array<[string, object, { properties: object; required?: readonly string[] }]> = [
    ['WorkloadSummary', summaryKeys, WorkloadSummarySchema],
    ['WorkloadDetail', detailKeys, WorkloadDetailSchema],
  ];
  for (const [name, keys, schema] of cases) {
    const required = new Set<string>(schema.required ?? []);
    for (const key of Object.keys(keys)) {
      assert.ok(key in schema.properties, `${name} has no field ${key}`);
      assert.ok(required.has(key), `${name}.${key} is optional; the UI reads it as always present`);
    }
  }
});
