/** Health, version, the OpenAPI document and the discovery endpoints of the server itself. */
import { Type } from 'typebox';
import type { SkepApp } from '../app.js';
import { PUBLIC_ROUTE } from '../auth.js';
import type { ApiContext } from '../../app/index.js';
import { ErrorBody } from '../../../schemas/index.js';

export async function systemRoutes(app: SkepApp, ctx: ApiContext): Promise<void> {
  app.get(
    '/health',
    {
      schema: {
        tags: ['system'],
        summary: 'Health check',
        description:
          '204 with the `X-Skep-Nonce` header (also sent as `X-Toolhive-Nonce`) when the workload runtime is usable; ' +
          '503 with the reason otherwise. Needs no credentials (liveness probes, `skep serve` finding a running server).',
        security: PUBLIC_ROUTE,
        response: { 204: Type.Null(), 503: ErrorBody },
      },
    },
    async (_request, reply) => {
      const health = await ctx.runtimeHealth();
      reply.header('X-Skep-Runtime', health.runtime);
      if (!health.ok) {
        return reply
          .code(503)
          .send({ code: 'unavailable', message: `runtime ${health.runtime}: ${health.reason}` });
      }
      reply.header('X-Skep-Nonce', ctx.nonce);
      reply.header('X-Toolhive-Nonce', ctx.nonce);
      return reply.code(204).send(null);
    },
  );

  // Listed in the document it serves, as the reference lists it (tag `system`).
  app.get(
    '/api/openapi.json',
    {
      schema: {
        tags: ['system'],
        summary: 'Get the OpenAPI specification',
        description: 'This document (OpenAPI 3.1).',
        response: {
          200: Type.Object({}, { additionalProperties: true, description: 'OpenAPI specification' }),
        },
      },
    },
    async () => app.swagger(),
  );

  app.get(
    '/api/v1beta/version',
    {
      schema: {
        tags: ['system'],
        summary: 'Version of the server',
        response: { 200: Type.Object({ version: Type.String() }) },
      },
    },
    async () => ({ version: ctx.version }),
  );
}
