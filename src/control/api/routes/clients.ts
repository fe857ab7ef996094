/**
 * `/api/v1beta/clients` and `/api/v1beta/discovery/clients`: client discovery, registration in
 * groups, and unregistration (ToolHive's client API). Bodies are checked loosely here (types
 * only) so that the domain reports an unknown client type as `client_unknown` and an empty
 * list as `bad_request`, with messages that say what to fix.
 */
import { Type } from 'typebox';
import type { SkepApp } from '../app.js';
import type { ApiContext } from '../../app/index.js';
import { NoContent } from '../../../schemas/index.js';
import { withErrors } from '../schemas.js';

const Registration = Type.Object(
  {
    name: Type.String({ description: 'Client type, e.g. `cursor`.' }),
    groups: Type.Array(Type.String(), { description: 'Groups the client is registered in.' }),
  },
  { $id: 'ClientRegistration' },
);

const ClientStatus = Type.Object(
  {
    client_type: Type.String(),
    installed: Type.Boolean({ description: "The client's config location exists in the user's home." }),
    registered: Type.Boolean({ description: 'The client is registered in at least one group.' }),
    supports_skills: Type.Boolean(),
  },
  { $id: 'ClientStatus' },
);

const Groups = Type.Optional(
  Type.Array(Type.String(), { description: 'Groups to act on; registration defaults to `default`.' }),
);

export async function clientRoutes(app: SkepApp, ctx: ApiContext): Promise<void> {
  app.get(
    '/api/v1beta/discovery/clients',
    {
      schema: {
        tags: ['clients'],
        summary: 'Status of every supported client (fixed order)',
        response: { 200: Type.Object({ clients: Type.Array(ClientStatus) }) },
      },
    },
    async () => ({ clients: ctx.clients.status() }),
  );

  app.get(
    '/api/v1beta/clients',
    {
      schema: {
        tags: ['clients'],
        summary: 'List registered clients (sorted by name)',
        response: { 200: Type.Array(Registration) },
      },
    },
    async () => ctx.clients.list(),
  );

  app.post(
    '/api/v1beta/clients',
    {
      schema: {
        tags: ['clients'],
        summary: 'Register a client',
        description:
          "Adds the client to the groups and writes the groups' running workloads into its MCP config file.",
        body: Type.Object({ name: Type.String(), groups: Groups }),
        response: withErrors({ 200: Registration }, 400, 404, 409),
      },
    },
    async (request) => ctx.clients.register(request.body.name, request.body.groups),
  );

  app.post(
    '/api/v1beta/clients/register',
    {
      schema: {
        tags: ['clients'],
        summary: 'Register several clients',
        body: Type.Object({ names: Type.Array(Type.String()), groups: Groups }),
        response: withErrors({ 200: Type.Array(Registration) }, 400, 404, 409),
      },
    },
    async (request) => ctx.clients.registerMany(request.body.names, request.body.groups),
  );

  app.post(
    '/api/v1beta/clients/unregister',
    {
      schema: {
        tags: ['clients'],
        summary: 'Unregister several clients (from the given groups, or from all)',
        body: Type.Object({ names: Type.Array(Type.String()), groups: Groups }),
        response: withErrors({ 204: NoContent }, 400, 404, 409),
      },
    },
    async (request, reply) => {
      await ctx.clients.unregisterMany(request.body.names, request.body.groups);
      return reply.code(204).send(null);
    },
  );

  app.delete(
    '/api/v1beta/clients/:name',
    {
      schema: {
        tags: ['clients'],
        summary: "Unregister a client from every group and remove Skep's entries from its config",
        params: Type.Object({ name: Type.String() }),
        response: withErrors({ 204: NoContent }, 400, 409),
      },
    },
    async (request, reply) => {
      await ctx.clients.unregister(request.params.name);
      return reply.code(204).send(null);
    },
  );

  app.delete(
    '/api/v1beta/clients/:name/groups/:group',
    {
      schema: {
        tags: ['clients'],
        summary: 'Unregister a client from one group',
        params: Type.Object({ name: Type.String(), group: Type.String() }),
        response: withErrors({ 204: NoContent }, 400, 404, 409),
      },
    },
    async (request, reply) => {
      await ctx.clients.unregisterFromGroup(request.params.name, request.params.group);
      return reply.code(204).send(null);
    },
  );
}
