/**
 * Registry routes: ToolHive's native shape under `/api/v1beta/registry` and its
 * MCP-registry-v0.1-style catalog under `/registry/{registryName}/v0.1`.
 * When the registry is served from a stale copy because its source is down, responses
 * carry a `Warning: 110` header naming the problem.
 */
import type { FastifyReply } from 'fastify';
import { type TObject, Type } from 'typebox';
import {
  CatalogServer,
  CatalogSkill,
  ImageServer,
  RegistryGroup as GroupJson,
  RemoteServer,
} from '../../../registry/index.js';
import { isSkepError, SkepError } from '../../../shared/index.js';
import type { SkepApp } from '../app.js';
import type { ApiContext } from '../../app/index.js';
import { withErrors } from '../schemas.js';

/**
 * Response schemas keep fields they do not list (upstream registries may add some). The
 * title names the schema in the OpenAPI document.
 */
const open = (schema: TObject, title: string) =>
  Type.Object(schema.properties, {
    additionalProperties: true,
    description: (schema as { description?: string }).description ?? '',
    title,
  });
const ServerJson = open(CatalogServer, 'CatalogServer');
const SkillJson = open(CatalogSkill, 'CatalogSkill');
const Image = open(ImageServer, 'ImageServer');
const Remote = open(RemoteServer, 'RemoteServer');

const AuthConfig = Type.Object(
  {
    issuer: Type.String(),
    client_id: Type.String(),
    audience: Type.Optional(Type.String()),
    scopes: Type.Array(Type.String()),
  },
  {
    title: 'RegistryAuthConfig',
    description: 'The registry login (never a secret); present when `auth_status` is not `none`.',
  },
);

const RegistryInfo = Type.Object(
  {
    name: Type.String(),
    type: Type.String({ description: '`default` (built-in), `file`, `url` or `api`.' }),
    source: Type.String({ description: 'URL or absolute path; empty for the built-in catalog.' }),
    version: Type.String(),
    last_updated: Type.String(),
    server_count: Type.Integer({ description: 'Image and remote servers.' }),
    auth_status: Type.String({
      description:
        '`none` (no login configured), `configured` (no login stored), `authenticated` (a refresh token is stored).',
    }),
    auth_type: Type.String({ description: '`oauth`, or empty without a login.' }),
    auth_config: Type.Optional(AuthConfig),
  },
  { title: 'RegistryInfo' },
);

const AuthBody = Type.Object(
  {
    issuer: Type.Optional(Type.String({ description: 'OpenID Connect issuer (discovery is checked).' })),
    client_id: Type.Optional(Type.String({ description: 'A public client: PKCE S256, no secret.' })),
    audience: Type.Optional(Type.String({ description: 'Sent as the RFC 8707 `resource` of the tokens.' })),
    scopes: Type.Optional(Type.Array(Type.String(), { description: 'Default `openid offline_access`.' })),
    callback_port: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 65_535,
        description:
          'Skep extension: port of the loopback redirect `http://127.0.0.1:<port>/callback`; default 8666, 0 picks a free one.',
      }),
    ),
  },
  { description: 'OAuth login for a `url` or `api_url` registry; omitted → any existing login is removed.' },
);

const LoginStatus = Type.Object({ status: Type.String() });

/** ToolHive's group shape: the members of a registry group, each in the map of its kind. */
const RegistryGroup = Type.Object(
  {
    name: Type.String(),
    description: Type.String(),
    servers: Type.Record(Type.String(), Image),
    remote_servers: Type.Record(Type.String(), Remote),
  },
  {
    title: 'RegistryGroup',
    description: 'Servers installed together: create a group of this name, then one workload per member.',
  },
);

const RegistryContent = Type.Object(
  {
    version: Type.String(),
    last_updated: Type.String(),
    servers: Type.Record(Type.String(), Image),
    remote_servers: Type.Record(Type.String(), Remote),
    groups: Type.Array(RegistryGroup, {
      description: 'From `data.groups` of the source (Skep extension); the built-in catalog has a few.',
    }),
  },
  { title: 'RegistryContent' },
);

const PagingMetadata = Type.Object({ total: Type.Integer(), page: Type.Integer(), limit: Type.Integer() });

// Kept as text: a non-integer or non-positive value falls back to the default (as in ToolHive).
const ListQuery = Type.Object({
  q: Type.Optional(Type.String({ description: 'Case-insensitive substring filter.' })),
  page: Type.Optional(Type.String({ description: '1-based page number; default 1.' })),
  limit: Type.Optional(
    Type.String({ description: 'Items per page; default 50, larger than 200 is clamped to 200.' }),
  ),
});

const NameParams = Type.Object({
  name: Type.String({ description: 'Registry name; only `default` exists.' }),
});
const CatalogParams = Type.Object({
  registryName: Type.String({ description: 'Ignored: the default registry is served.' }),
});

/** The catalog surface answers with the reference's v0.1 code `not_found` (ToolHive's error body). */
async function catalogCall<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (isSkepError(err) && (err.code === 'server_not_found' || err.code === 'skill_not_found')) {
      throw new SkepError('not_found', err.message, { cause: err });
    }
    throw err;
  }
}

export async function registryRoutes(app: SkepApp, ctx: ApiContext): Promise<void> {
  const registry = ctx.registry;

  const warn = (reply: FastifyReply): void => {
    const warning = registry.lastWarning();
    if (warning !== undefined) {
      reply.header('Warning', `110 skep "${warning.replace(/[^\x20-\x7e]/g, '?').replaceAll('"', "'")}"`);
    }
  };

  // -------------------------------------------------------------- native

  app.get(
    '/api/v1beta/registry',
    {
      schema: {
        tags: ['registry'],
        summary: 'List registries (always one: `default`)',
        response: withErrors({ 200: Type.Object({ registries: Type.Array(RegistryInfo) }) }, 502, 503),
      },
    },
    async (_request, reply) => {
      const registries = await registry.listRegistries();
      warn(reply);
      return { registries };
    },
  );

  app.get(
    '/api/v1beta/registry/:name',
    {
      schema: {
        tags: ['registry'],
        summary: 'Get a registry with its content in the native shape',
        params: NameParams,
        response: withErrors(
          { 200: Type.Intersect([RegistryInfo, Type.Object({ registry: RegistryContent })]) },
          404,
          502,
          503,
        ),
      },
    },
    async (request, reply) => {
      const result = await registry.getRegistry(request.params.name);
      warn(reply);
      return result;
    },
  );

  app.get(
    '/api/v1beta/registry/:name/servers',
    {
      schema: {
        tags: ['registry'],
        summary: 'List the servers of a registry (native shape, sorted by name)',
        params: NameParams,
        response: withErrors(
          { 200: Type.Object({ servers: Type.Array(Image), remote_servers: Type.Array(Remote) }) },
          404,
          502,
          503,
        ),
      },
    },
    async (request, reply) => {
      const result = await registry.listNativeServers(request.params.name);
      warn(reply);
      return result;
    },
  );

  app.get(
    '/api/v1beta/registry/:name/servers/:serverName',
    {
      schema: {
        tags: ['registry'],
        summary: 'Get a server by full name (URL-encode the slash) or unique short name',
        params: Type.Object({ name: Type.String(), serverName: Type.String() }),
        response: withErrors(
          {
            200: Type.Object({
              is_remote: Type.Boolean(),
              server: Type.Optional(Image),
              remote_server: Type.Optional(Remote),
            }),
          },
          400,
          404,
          502,
          503,
        ),
      },
    },
    async (request, reply) => {
      const found = await registry.getNativeServer(request.params.name, request.params.serverName);
      warn(reply);
      return found.is_remote
        ? { is_remote: true, remote_server: found.remote_server }
        : { is_remote: false, server: found.server };
    },
  );

  app.put(
    '/api/v1beta/registry/:name',
    {
      schema: {
        tags: ['registry'],
        summary: 'Change the source of the default registry',
        description:
          'Give at most one of `url` (a registry JSON document, or the base URL of a v0.1 registry API, which is ' +
          'detected), `api_url` or `local_path`; none goes back to the built-in catalog. URLs must be https unless ' +
          '`allow_private_ip` is true, which also allows private and loopback addresses. The source is fetched ' +
          '(5 s deadline) and validated before anything is saved: unreachable → 504, unusable content → 502, ' +
          'private address without `allow_private_ip` → 403, bad input → 400. `auth` adds an OAuth login ' +
          '(`issuer` and `client_id` required; OIDC discovery is checked, 400 on failure); a registry that asks ' +
          'for a token is then read after `POST /api/v1beta/registry/auth/login`.',
        params: NameParams,
        body: Type.Object({
          url: Type.Optional(Type.String()),
          api_url: Type.Optional(Type.String()),
          local_path: Type.Optional(Type.String()),
          allow_private_ip: Type.Optional(Type.Boolean()),
          auth: Type.Optional(Type.Union([AuthBody, Type.Null()])),
        }),
        response: withErrors({ 200: Type.Object({ type: Type.String() }) }, 400, 403, 404, 502, 504),
      },
    },
    async (request) => {
      const { auth, ...update } = request.body;
      return registry.configure(request.params.name, auth === null ? update : { auth, ...update });
    },
  );

  app.post(
    '/api/v1beta/registry/auth/login',
    {
      schema: {
        tags: ['registry'],
        summary: 'Log in to the registry (OAuth authorization code + PKCE in a browser)',
        description:
          'Runs the login on the machine of `skep serve`: the authorization URL is printed on its stderr (and ' +
          'logged), and a browser is opened when there is a display. Answers when the login is complete (at most ' +
          '5 min); the refresh token is kept in the secrets store. 400 when no `auth` is configured.',
        response: withErrors({ 200: LoginStatus }, 400, 404, 405, 409, 502, 503, 504),
      },
    },
    async () => registry.loginRegistry(),
  );

  app.post(
    '/api/v1beta/registry/auth/logout',
    {
      schema: {
        tags: ['registry'],
        summary: 'Log out of the registry',
        description:
          'Deletes the stored refresh token, forgets the tokens and the content read with them. 400 when no `auth` ' +
          'is configured.',
        response: withErrors({ 200: LoginStatus }, 400, 404, 405),
      },
    },
    async () => registry.logoutRegistry(),
  );

  app.post(
    '/api/v1beta/registry/:name/refresh',
    {
      schema: {
        tags: ['registry'],
        summary: 'Reload the registry from its source now',
        params: NameParams,
        response: withErrors(
          { 200: Type.Object({ status: Type.String(), type: Type.String(), server_count: Type.Integer() }) },
          404,
          502,
          503,
        ),
      },
    },
    async (request) => registry.refresh(request.params.name),
  );

  // -------------------------------------------------------------- catalog (v0.1)

  app.get(
    '/registry/:registryName/v0.1/servers',
    {
      schema: {
        tags: ['registry catalog'],
        summary: 'List servers (search with q; paged; sorted by name)',
        params: CatalogParams,
        querystring: ListQuery,
        response: withErrors(
          { 200: Type.Object({ servers: Type.Array(ServerJson), metadata: PagingMetadata }) },
          500,
          502,
          503,
        ),
      },
    },
    async (request, reply) => {
      const page = await registry.listCatalogServers(request.query);
      warn(reply);
      return { servers: page.items, metadata: page.metadata };
    },
  );

  app.get(
    '/registry/:registryName/v0.1/servers/:serverName/versions/latest',
    {
      schema: {
        tags: ['registry catalog'],
        summary: 'Get a server (URL-encode the slash of a reverse-DNS name)',
        params: Type.Object({ registryName: Type.String(), serverName: Type.String() }),
        response: withErrors({ 200: ServerJson }, 400, 404, 500, 502, 503),
      },
    },
    async (request, reply) => {
      const server = await catalogCall(() => registry.getCatalogServer(request.params.serverName));
      warn(reply);
      return server;
    },
  );

  app.get(
    '/registry/:registryName/v0.1/x/dev.toolhive/skills',
    {
      schema: {
        tags: ['registry catalog'],
        summary: 'List skills (search with q over name, namespace, description; paged; sorted by name)',
        params: CatalogParams,
        querystring: ListQuery,
        response: withErrors(
          { 200: Type.Object({ skills: Type.Array(SkillJson), metadata: PagingMetadata }) },
          500,
          502,
          503,
        ),
      },
    },
    async (request, reply) => {
      const page = await registry.listCatalogSkills(request.query);
      warn(reply);
      return { skills: page.items, metadata: page.metadata };
    },
  );

  app.get(
    '/registry/:registryName/v0.1/x/dev.skep/groups',
    {
      schema: {
        tags: ['registry catalog'],
        summary: 'List the groups of servers installed together (Skep extension)',
        description:
          'Members are full server names. A Skep that uses this API as its source reads its groups from here.',
        params: CatalogParams,
        response: withErrors({ 200: Type.Object({ groups: Type.Array(GroupJson) }) }, 500, 502, 503),
      },
    },
    async (_request, reply) => {
      const groups = await registry.listCatalogGroups();
      warn(reply);
      return { groups };
    },
  );

  app.get(
    '/registry/:registryName/v0.1/x/dev.toolhive/skills/:namespace/:skillName',
    {
      schema: {
        tags: ['registry catalog'],
        summary: 'Get a skill by namespace and name',
        params: Type.Object({
          registryName: Type.String(),
          namespace: Type.String(),
          skillName: Type.String(),
        }),
        response: withErrors({ 200: SkillJson }, 404, 500, 502, 503),
      },
    },
    async (request, reply) => {
      const { namespace, skillName } = request.params;
      const skill = await catalogCall(() => registry.getCatalogSkill(namespace, skillName));
      warn(reply);
      return skill;
    },
  );
}
