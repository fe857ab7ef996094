/**
 * The management API application: Fastify with TypeBox route schemas, one error shape,
 * a 1 MiB body limit, the DNS-rebinding guard, 404/405 handling and the OpenAPI 3.1
 * document generated from the route schemas.
 */
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Ajv, type ValidateFunction } from 'ajv';
import fastJsonStringify from 'fast-json-stringify';
import addFormatsModule from 'ajv-formats';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';
import FindMyWay from 'find-my-way';
import type { ApiContext } from './context.js';
import { DOCS_HTML } from './docs-page.js';
import { handleError, sendError } from './errors.js';
import { routeModules } from './routes/index.js';
import { createHostGuard } from './security.js';

export const BODY_LIMIT = 1024 * 1024;

// ajv-formats is CommonJS; its default export is the plugin function.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

export type SkepApp = FastifyInstance<
  import('node:http').Server,
  import('node:http').IncomingMessage,
  import('node:http').ServerResponse,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

export interface AppOptions {
  /** The address the API is bound to; decides which Host names the guard accepts. */
  bindHost?: string;
}

export async function buildApp(ctx: ApiContext, options: AppOptions = {}): Promise<SkepApp> {
  const app = Fastify({
    loggerInstance: ctx.logger as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: BODY_LIMIT,
    requestTimeout: 30_000,
    keepAliveTimeout: 120_000,
    return503OnClosing: true,
    routerOptions: { ignoreTrailingSlash: true },
  }).withTypeProvider<TypeBoxTypeProvider>();

  // Bodies are validated strictly (no type coercion: `{"name": 5}` is an error, not "5");
  // query strings and path parameters are text, so they are coerced to the schema's types.
  const strict = addFormats(
    new Ajv({ useDefaults: true, coerceTypes: false, allErrors: false, strict: false }),
  );
  const lenient = addFormats(
    new Ajv({ useDefaults: true, coerceTypes: 'array', allErrors: false, strict: false }),
  );
  // Validators and serializers are compiled on a route's first request, not at start-up:
  // compiling ~90 routes' schemas up front cost most of `skep serve`'s start time and memory.
  app.setValidatorCompiler(({ schema, httpPart }) => {
    const ajv = httpPart === 'body' ? strict : lenient;
    let compiled: ValidateFunction | undefined;
    const validate = (data: unknown): boolean => {
      // A schema with an $id may be shared by several routes: compile it once per instance.
      const id = (schema as { $id?: string }).$id;
      compiled ??= (id === undefined ? undefined : ajv.getSchema(id)) ?? ajv.compile(schema as object);
      const ok = compiled(data) as boolean;
      validate.errors = compiled.errors;
      return ok;
    };
    validate.errors = null as ValidateFunction['errors'];
    return validate;
  });
  // Response serializers also keep only the fields their schema names (nothing internal leaks).
  app.setSerializerCompiler(({ schema }) => {
    let serialize: ((data: unknown) => string) | undefined;
    return (data) => {
      serialize ??= fastJsonStringify(schema as Parameters<typeof fastJsonStringify>[0]);
      return serialize(data);
    };
  });

  // A second router that knows every route, to tell 405 (path exists) from 404.
  const known = FindMyWay({ ignoreTrailingSlash: true });
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) {
      try {
        known.on(method as 'GET', route.url, () => undefined);
      } catch {
        // duplicate registration (e.g. HEAD added by fastify): already known
      }
    }
  });

  app.addHook(
    'onRequest',
    createHostGuard({
      allowedHosts: ctx.config.server.allowed_hosts,
      bindHost: options.bindHost ?? ctx.config.server.host,
    }),
  );
  app.addHook('onSend', async (_request, reply, payload) => {
    reply.header('X-Content-Type-Options', 'nosniff');
    reply.header('Cross-Origin-Resource-Policy', 'same-origin');
    return payload;
  });

  app.setErrorHandler(handleError);
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '/';
    const allowed = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].filter(
      (m) => m !== request.method && known.find(m as 'GET', path) !== null,
    );
    if (allowed.length > 0) {
      reply.header('Allow', allowed.join(', '));
      return sendError(
        reply,
        405,
        'method_not_allowed',
        `${request.method} is not allowed on ${path}; use ${allowed.join(', ')}`,
      );
    }
    return sendError(reply, 404, 'not_found', `no route ${request.method} ${path}`);
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Skep management API',
        version: ctx.version,
        description:
          'Run, share and secure MCP tool servers. Wire-compatible with the ToolHive `thv serve` API. ' +
          'Every error body is `{ "code", "message" }`; see the `ErrorBody` schema for the code table.',
      },
      components: {},
    },
  });

  for (const register of routeModules) await register(app, ctx);
  app.get('/api/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  app.get('/api/doc', { schema: { hide: true } }, async (_request, reply) =>
    reply
      .type('text/html; charset=utf-8')
      .header(
        'Content-Security-Policy',
        "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'",
      )
      .send(DOCS_HTML),
  );
  return app;
}
