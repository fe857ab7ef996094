/** `/api/v1beta/groups`: list, create, get and delete groups. */
import { Type } from 'typebox';
import type { SkepApp } from '../app.js';
import type { ApiContext } from '../../app/index.js';
import { withErrors } from '../schemas.js';

const GroupBody = Type.Object(
  {
    name: Type.String(),
    registered_clients: Type.Array(Type.String()),
  },
  { $id: 'Group' },
);

const NameParams = Type.Object({ name: Type.String() });

export async function groupRoutes(app: SkepApp, ctx: ApiContext): Promise<void> {
  const view = (g: { name: string; registered_clients: string[] }) => ({
    name: g.name,
    registered_clients: g.registered_clients,
  });

  app.get(
    '/api/v1beta/groups',
    {
      schema: {
        tags: ['groups'],
        summary: 'List groups (sorted by name)',
        response: { 200: Type.Object({ groups: Type.Array(GroupBody) }) },
      },
    },
    async () => ({ groups: ctx.groups.list().map(view) }),
  );

  app.post(
    '/api/v1beta/groups',
    {
      schema: {
        tags: ['groups'],
        summary: 'Create a group',
        body: Type.Object({
          name: Type.String({ description: 'Lowercase letters, digits, `_`, `-`, single spaces.' }),
        }),
        response: withErrors({ 201: Type.Object({ name: Type.String() }) }, 400, 409),
      },
    },
    async (request, reply) => {
      const group = ctx.groups.create(request.body.name);
      return reply.code(201).send({ name: group.name });
    },
  );

  app.get(
    '/api/v1beta/groups/:name',
    {
      schema: {
        tags: ['groups'],
        summary: 'Get a group',
        params: NameParams,
        response: withErrors({ 200: GroupBody }, 400, 404),
      },
    },
    async (request) => view(ctx.groups.get(request.params.name)),
  );

  app.delete(
    '/api/v1beta/groups/:name',
    {
      schema: {
        tags: ['groups'],
        summary: 'Delete a group',
        description:
          'A group that still holds workloads is refused (409 `group_not_empty`, their names in `workloads`) unless `with-workloads=true`, which deletes them with it; they are never moved to `default` (the reference moves them). `default` cannot be deleted.',
        params: NameParams,
        querystring: Type.Object({ 'with-workloads': Type.Optional(Type.Boolean()) }),
        response: withErrors({ 204: Type.Null() }, 400, 404, 409),
      },
    },
    async (request, reply) => {
      await ctx.groups.delete(request.params.name, {
        withWorkloads: request.query['with-workloads'] === true,
      });
      return reply.code(204).send(null);
    },
  );
}
