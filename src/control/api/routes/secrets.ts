/**
 * `/api/v1beta/secrets`: set up the provider, describe it, and list / create / update /
 * delete its secrets. Values are accepted, never returned. Status codes follow the
 * reference, except that deleting a missing secret is 404 (the reference answers 500).
 */
import { Type } from 'typebox';
import type { SkepApp } from '../app.js';
import type { ApiContext } from '../../app/index.js';
import { NoContent } from '../../../schemas/index.js';
import { withErrors } from '../schemas.js';

const Capabilities = Type.Object(
  {
    can_read: Type.Boolean(),
    can_write: Type.Boolean(),
    can_delete: Type.Boolean(),
    can_list: Type.Boolean(),
    can_cleanup: Type.Boolean(),
  },
  { title: 'SecretsCapabilities' },
);

const KeyResponse = Type.Object({ key: Type.String(), message: Type.String() });
const KeyParams = Type.Object({ key: Type.String() });

export async function secretRoutes(app: SkepApp, ctx: ApiContext): Promise<void> {
  app.post(
    '/api/v1beta/secrets',
    {
      schema: {
        tags: ['secrets'],
        summary: 'Set up or reconfigure the secrets provider',
        description:
          'For `encrypted`, `password` opens (or creates) the store; without one, the saved password is used (SKEP_SECRETS_PASSWORD, the OS keyring, or the 0600 password file), or a strong one is generated and saved. `new_password` re-encrypts every secret.',
        body: Type.Object({
          provider_type: Type.String({ description: '`encrypted`, `1password` or `environment`.' }),
          password: Type.Optional(Type.String({ description: 'Encrypted only.' })),
          new_password: Type.Optional(Type.String({ description: 'Encrypted only: change the password.' })),
          save_password: Type.Optional(
            Type.Boolean({
              description:
                'Encrypted only (Skep): keep a given password in the OS keyring, else the 0600 password file (default true). A generated password is always saved.',
            }),
          ),
        }),
        response: withErrors(
          { 201: Type.Object({ provider_type: Type.String(), message: Type.String() }) },
          400,
          500,
        ),
      },
    },
    async (request, reply) => {
      const result = await ctx.secrets.setup(request.body);
      return reply.code(201).send(result);
    },
  );

  app.get(
    '/api/v1beta/secrets/default',
    {
      schema: {
        tags: ['secrets'],
        summary: 'Get the secrets provider and its capabilities',
        response: withErrors(
          {
            200: Type.Object({
              name: Type.String(),
              provider_type: Type.String(),
              capabilities: Capabilities,
            }),
          },
          404,
        ),
      },
    },
    async () => ctx.secrets.details(),
  );

  app.get(
    '/api/v1beta/secrets/default/keys',
    {
      schema: {
        tags: ['secrets'],
        summary: 'List secret keys (never values), sorted',
        response: withErrors(
          {
            200: Type.Object({
              keys: Type.Array(
                Type.Object({ key: Type.String(), description: Type.Optional(Type.String()) }),
              ),
            }),
          },
          400,
          404,
          405,
          500,
        ),
      },
    },
    async () => ({ keys: await ctx.secrets.listKeys() }),
  );

  app.post(
    '/api/v1beta/secrets/default/keys',
    {
      schema: {
        tags: ['secrets'],
        summary: 'Create a secret',
        body: Type.Object({ key: Type.String(), value: Type.String() }),
        response: withErrors({ 201: KeyResponse }, 400, 404, 405, 409, 500),
      },
    },
    async (request, reply) => {
      const { key, value } = request.body;
      await ctx.secrets.create(key, value);
      return reply.code(201).send({ key, message: 'Secret created successfully' });
    },
  );

  app.put(
    '/api/v1beta/secrets/default/keys/:key',
    {
      schema: {
        tags: ['secrets'],
        summary: 'Update a secret',
        params: KeyParams,
        body: Type.Object({ value: Type.String() }),
        response: withErrors({ 200: KeyResponse }, 400, 404, 405, 500),
      },
    },
    async (request) => {
      await ctx.secrets.update(request.params.key, request.body.value);
      return { key: request.params.key, message: 'Secret updated successfully' };
    },
  );

  app.delete(
    '/api/v1beta/secrets/default/keys/:key',
    {
      schema: {
        tags: ['secrets'],
        summary: 'Delete a secret',
        params: KeyParams,
        response: withErrors({ 204: NoContent }, 400, 404, 405, 500),
      },
    },
    async (request, reply) => {
      await ctx.secrets.delete(request.params.key);
      return reply.code(204).send(null);
    },
  );
}
