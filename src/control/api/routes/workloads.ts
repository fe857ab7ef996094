/**
 * `/api/v1beta/workloads`: create, list, inspect, export, update (merge), stop, restart,
 * delete (one or in bulk), status and logs. Paths and bodies follow the reference
 * (ToolHive's `/api/v1beta/workloads`); see the route descriptions for where Skep differs.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { definedOnly } from '../../../shared/index.js';
import {
  BulkRequestSchema,
  CreateWorkloadSchema,
  RunConfigSchema,
  UpdateWorkloadSchema,
  UpgradeCheckResultSchema,
  UpgradeRequestSchema,
  WorkloadDetailSchema,
  WorkloadSummarySchema,
} from '../../../schemas/index.js';
import type { ListOptions } from '../../../workloads/index.js';
import type { SkepApp } from '../app.js';
import type { ApiContext } from '../../app/index.js';
import { withErrors } from '../schemas.js';

const NameParams = Type.Object({ name: Type.String({ description: 'Workload name.' }) });
const NamePort = Type.Object({ name: Type.String(), port: Type.Integer() });
/**
 * As in ToolHive's API, bulk delete and bulk restart answer 202 with a JSON string (a short
 * message), and so do its other 202s (bulk stop, and stop, restart and delete of one
 * workload). The names the operation applies to go to the log.
 */
const Accepted = Type.String({
  description: 'Accepted: a short message; the work continues in the background. Poll the status.',
});
const ACTION_NOUN = { delete: 'deletion', stop: 'stop', restart: 'restart' } as const;

/** The 202 answer: a JSON string, written as JSON (Fastify sends a bare string as it is). */
function accepted(
  request: FastifyRequest,
  reply: FastifyReply,
  action: keyof typeof ACTION_NOUN,
  names: readonly string[],
): FastifyReply {
  request.log.info({ action, names }, 'workload operation accepted');
  const what = names.length === 1 ? `workload ${names[0]}` : `${names.length} workloads`;
  return reply
    .code(202)
    .type('application/json; charset=utf-8')
    .send(JSON.stringify(`${ACTION_NOUN[action]} of ${what} started`));
}
const LogsQuery = Type.Object({
  lines: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 100_000, default: 1000, description: 'Last N lines.' }),
  ),
});
/** Which workloads a list or check covers: running ones unless `all`, optionally one group. */
const SelectionQuery = Type.Object({
  all: Type.Optional(Type.Boolean()),
  group: Type.Optional(Type.String()),
});
const selection = (query: { all?: boolean; group?: string }): ListOptions => ({
  all: query.all === true,
  ...definedOnly({ group: query.group }),
});
const tags = ['workloads'];

export async function workloadRoutes(app: SkepApp, ctx: ApiContext): Promise<void> {
  const workloads = ctx.workloads;

  app.get(
    '/api/v1beta/workloads',
    {
      schema: {
        tags,
        summary: 'List workloads (sorted by name)',
        description:
          'Only running workloads unless `all=true`; `group` filters on the exact group (404 if it does not exist).',
        querystring: SelectionQuery,
        response: withErrors(
          { 200: Type.Object({ workloads: Type.Array(WorkloadSummarySchema) }) },
          400,
          404,
        ),
      },
    },
    async (request) => ({
      workloads: workloads.list(selection(request.query)),
    }),
  );

  app.post(
    '/api/v1beta/workloads',
    {
      schema: {
        tags,
        summary: 'Create and start a workload',
        description:
          'Everything is validated before anything is written. `name` is derived from the image when omitted. ' +
          'A missing secret is 404 `secret_not_found`; an explicit busy `proxy_port` is 400 `port_unavailable`.',
        body: CreateWorkloadSchema,
        response: withErrors({ 201: NamePort }, 400, 404, 409),
      },
    },
    async (request, reply) => reply.code(201).send(await workloads.create(request.body)),
  );

  // Bulk delete / stop / restart: every name is checked first, the work runs in the background.
  for (const action of ['delete', 'stop', 'restart'] as const) {
    const verb = `${action[0]!.toUpperCase()}${action.slice(1)}`;
    app.post(
      `/api/v1beta/workloads/${action}`,
      {
        schema: {
          tags,
          summary: `${verb} workloads in bulk (by names or by group)`,
          description:
            'Exactly one of `names` or `group`. Every name must exist (404 lists the missing ones; nothing is changed).',
          body: BulkRequestSchema,
          response: withErrors({ 202: Accepted }, 400, 404),
        },
      },
      async (request, reply) => accepted(request, reply, action, workloads.bulk(action, request.body)),
    );
  }

  app.get(
    '/api/v1beta/workloads/upgrade-check',
    {
      schema: {
        tags,
        summary: 'Check workloads for registry upgrades',
        description:
          'For each workload (running only unless `all=true`; `group` filters), whether its registry entry now ' +
          'names another image. Offline metadata comparison: nothing is pulled; no secret value is returned.',
        querystring: SelectionQuery,
        response: withErrors(
          { 200: Type.Object({ results: Type.Array(UpgradeCheckResultSchema) }) },
          400,
          404,
        ),
      },
    },
    async (request) => ({
      results: await workloads.upgradeCheckAll(selection(request.query)),
    }),
  );

  app.get(
    '/api/v1beta/workloads/:name/upgrade-check',
    {
      schema: {
        tags,
        summary: 'Check a workload for a registry upgrade',
        params: NameParams,
        response: withErrors({ 200: Type.Object({ result: UpgradeCheckResultSchema }) }, 400, 404),
      },
    },
    async (request) => ({ result: await workloads.upgradeCheck(request.params.name) }),
  );

  app.post(
    '/api/v1beta/workloads/:name/upgrade',
    {
      schema: {
        tags,
        summary: 'Apply a registry upgrade',
        description:
          'Moves the workload to the image its registry entry names now, keeping its configuration; `env` and ' +
          '`secrets` (references) are merged in, and a running workload restarts. Nothing to upgrade → the check, ' +
          'unchanged. 422 when the new version requires variables still missing. Answers the check after the upgrade.',
        params: NameParams,
        body: UpgradeRequestSchema,
        response: withErrors({ 200: Type.Object({ result: UpgradeCheckResultSchema }) }, 400, 404, 422),
      },
      // Every field is optional: a POST without a body is the empty request.
      preValidation: async (request: { body: unknown }) => {
        request.body ??= {};
      },
    },
    async (request) => ({ result: await workloads.upgrade(request.params.name, request.body) }),
  );

  app.get(
    '/api/v1beta/workloads/:name',
    {
      schema: {
        tags,
        summary: 'Get workload details',
        params: NameParams,
        response: withErrors({ 200: WorkloadDetailSchema }, 400, 404),
      },
    },
    async (request) => workloads.get(request.params.name),
  );

  app.get(
    '/api/v1beta/workloads/:name/export',
    {
      schema: {
        tags,
        summary: 'Export the run configuration (JSON)',
        description: 'Secrets appear as references (`<name>,target=<ENV>`), never as values.',
        params: NameParams,
        response: withErrors({ 200: RunConfigSchema }, 400, 404),
      },
    },
    async (request) => workloads.exportConfig(request.params.name),
  );

  const updateRoute = {
    schema: {
      tags,
      summary: 'Update a workload (merge)',
      description:
        'Fields present replace the stored values; omitted fields keep theirs (the reference resets them). ' +
        'A running workload is restarted with the new configuration.',
      params: NameParams,
      body: UpdateWorkloadSchema,
      response: withErrors({ 200: NamePort }, 400, 404),
    },
  };
  app.post('/api/v1beta/workloads/:name/edit', updateRoute, async (request) =>
    workloads.update(request.params.name, request.body),
  );
  app.put('/api/v1beta/workloads/:name', updateRoute, async (request) =>
    workloads.update(request.params.name, request.body),
  );

  // Stop, restart and delete of one workload: validated now, carried out in the background.
  const singleActions = [
    {
      method: 'POST',
      url: '/api/v1beta/workloads/:name/stop',
      summary: 'Stop a workload',
      action: 'stop',
      run: workloads.stop,
    },
    {
      method: 'POST',
      url: '/api/v1beta/workloads/:name/restart',
      summary: 'Restart a workload',
      action: 'restart',
      run: workloads.restart,
    },
    {
      method: 'DELETE',
      url: '/api/v1beta/workloads/:name',
      summary: 'Delete a workload',
      action: 'delete',
      run: workloads.delete,
    },
  ] as const;
  for (const action of singleActions) {
    app.route({
      method: action.method,
      url: action.url,
      schema: {
        tags,
        summary: action.summary,
        params: NameParams,
        response: withErrors({ 202: Accepted }, 400, 404),
      },
      handler: async (request, reply) => {
        action.run.call(workloads, request.params.name);
        return accepted(request, reply, action.action, [request.params.name]);
      },
    });
  }

  app.get(
    '/api/v1beta/workloads/:name/status',
    {
      schema: {
        tags,
        summary: 'Get the status of a workload',
        params: NameParams,
        response: withErrors(
          { 200: Type.Object({ status: Type.String(), status_context: Type.String() }) },
          400,
          404,
        ),
      },
    },
    async (request) => workloads.status(request.params.name),
  );

  const logRoutes = [
    {
      path: 'logs',
      summary: "The server's log (stderr), last lines",
      read: (name: string, lines: number) => workloads.logs(name, lines),
    },
    {
      path: 'proxy-logs',
      summary: "The runner and proxy's log, last lines",
      read: (name: string, lines: number) => workloads.proxyLogs(name, lines),
    },
  ];
  for (const { path, summary, read } of logRoutes) {
    app.get(
      `/api/v1beta/workloads/:name/${path}`,
      {
        schema: {
          tags,
          summary,
          params: NameParams,
          querystring: LogsQuery,
          response: withErrors({ 200: Type.String() }, 400, 404),
        },
      },
      async (request, reply) =>
        reply.type('text/plain; charset=utf-8').send(read(request.params.name, request.query.lines ?? 1000)),
    );
  }
}
