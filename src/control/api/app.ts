/**
 * The management API application: Fastify with TypeBox route schemas, one error shape,
 * a 1 MiB body limit, on TCP the DNS-rebinding guard and authentication (bearer token or
 * browser session), 404/405 handling and the OpenAPI 3.1 document generated from the route
 * schemas.
 */
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import fastJsonStringify from 'fast-json-stringify';
import addFormatsModule from 'ajv-formats';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyHttpsOptions,
  type FastifyInstance,
  type FastifyServerOptions,
  LogController,
} from 'fastify';
import FindMyWay from 'find-my-way';
import { LISTENER_DEFAULTS } from '../../shared/index.js';
import { BEARER_SCHEME, createApiAuth, SESSION_COOKIE, SESSION_SCHEME } from './auth.js';
import { BrowserSessions } from './browser-sessions.js';
import type { ApiContext } from '../app/index.js';
import { DOCS_CSP, type OpenApiDocument, renderDocsPage } from './docs-page.js';
import { handleError, sendError } from './errors.js';
import { createSchemaNamer } from './openapi.js';
import { authRoutes } from './routes/auth.js';
import { routeModules } from './routes/index.js';
import { createHostGuard } from './security.js';
import { uiRoutes } from './ui.js';

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
  /**
   * The listener the app serves. `tcp` (default): Host/Origin guard and authentication on
   * every request. `unix`: neither; the socket's file mode decides who may connect, and a
   * browser cannot reach a socket (ToolHive Studio talks to it unchanged).
   */
  transport?: 'tcp' | 'unix';
  /** The API token every TCP request must carry (`resolveApiToken`); required on TCP. */
  apiToken?: string;
  /** The address the API is bound to; decides which Host names the guard accepts. */
  bindHost?: string;
  /** Browser origins allowed besides the server's own; default: config `server.allowed_origins`. */
  allowedOrigins?: readonly string[];
  /** PEM private key and certificate (chain): the app serves HTTPS. */
  tls?: { key: string; cert: string };
  /** Login tickets and browser sessions; tests pass one with a frozen clock. */
  sessions?: BrowserSessions;
  /** The secret of the discovery file, which `GET /auth/challenge` proves (`skep serve` on TCP). */
  discoveryProofKey?: Buffer;
}

export async function buildApp(ctx: ApiContext, options: AppOptions = {}): Promise<SkepApp> {
  const transport = options.transport ?? 'tcp';
  // Misuse, not input: an app on TCP without a token would let any local user call the API.
  if (transport === 'tcp' && (options.apiToken === undefined || options.apiToken === ''))
    throw new Error('buildApp: an apiToken is required on TCP');
  const scheme = options.tls === undefined ? 'http' : 'https';
  const sessions = options.sessions ?? new BrowserSessions();
  const fastifyOptions = {
    loggerInstance: ctx.logger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: BODY_LIMIT,
    requestTimeout: 30_000,
    keepAliveTimeout: 120_000,
    return503OnClosing: true,
    routerOptions: { ignoreTrailingSlash: true },
  } satisfies FastifyServerOptions;
  // With `https` Fastify's types name an https.Server; the routes and callers use nothing
  // that differs (`app.server.address()`, `inject`, `listen`), so one app type serves both.
  const base = (
    options.tls === undefined
      ? Fastify(fastifyOptions)
      : Fastify({ ...fastifyOptions, https: options.tls } as FastifyHttpsOptions<import('node:https').Server>)
  ) as FastifyInstance;
  const app = base.withTypeProvider<TypeBoxTypeProvider>() as unknown as SkepApp;
  // Bounded like every listener (`shared/listener-limits.ts`); bodies are read only after the
  // `onRequest` authentication, within `bodyLimit` and `requestTimeout`.
  app.server.maxConnections = LISTENER_DEFAULTS.maxConnections;

  // Bodies are validated strictly (no type coercion: `{"name": 5}` is an error, not "5");
  // query strings and path parameters are text, so they are coerced to the schema's types.
  // The route schemas are TypeBox's: not checked against the meta-schema (as in `validation/validate.ts`),
  // which would compile that meta-schema on each instance's first request.
  // Each Ajv is made on the first request that needs it: an instance (with its formats) is a
  // few milliseconds and a few hundred kilobytes that `skep serve` need not spend before it is up.
  const ajvCoercing = (coerceTypes: false | 'array') =>
    addFormats(
      new Ajv({ useDefaults: true, coerceTypes, allErrors: false, strict: false, validateSchema: false }),
    );
  let strict: Ajv | undefined;
  let lenient: Ajv | undefined;
  // Validators and serializers are compiled on a route's first request, not at start-up:
  // compiling ~90 routes' schemas up front cost most of `skep serve`'s start time and memory.
  app.setValidatorCompiler(({ schema, httpPart }) => {
    let compiled: ValidateFunction | undefined;
    const validate = (data: unknown): boolean => {
      const ajv = httpPart === 'body' ? (strict ??= ajvCoercing(false)) : (lenient ??= ajvCoercing('array'));
      // A schema with an $id may be shared by several routes: compile it once per instance.
      const id = (schema as { $id?: string }).$id;
      compiled ??= (id === undefined ? undefined : ajv.getSchema(id)) ?? ajv.compile(schema as object);
      const ok = compiled(data);
      validate.errors = compiled.errors ?? null;
      return ok;
    };
    validate.errors = null as ErrorObject[] | null;
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

  // A second router that knows every route, to tell 405 (path exists) from 404; built on the
  // first request no route answers, not at start-up (its ~100 registrations are start-up time).
  const routes: { methods: readonly string[]; url: string }[] = [];
  let knownRouter: ReturnType<typeof FindMyWay> | undefined;
  const known = (): ReturnType<typeof FindMyWay> => {
    if (knownRouter !== undefined) return knownRouter;
    const router = FindMyWay({ ignoreTrailingSlash: true });
    for (const { methods, url } of routes)
      for (const method of methods) {
        try {
          router.on(method as 'GET', url, () => undefined);
        } catch {
          // duplicate registration (e.g. HEAD added by fastify): already known
        }
      }
    knownRouter = router;
    return router;
  };
  app.addHook('onRoute', (route) => {
    routes.push({ methods: Array.isArray(route.method) ? route.method : [route.method], url: route.url });
    knownRouter = undefined;
  });

  if (transport === 'tcp') {
    // The guard first: a DNS-rebinding page gets 403 whatever it sends.
    app.addHook(
      'onRequest',
      createHostGuard({
        allowedHosts: ctx.config.server.allowed_hosts,
        allowedOrigins: options.allowedOrigins ?? ctx.config.server.allowed_origins,
        bindHost: options.bindHost ?? ctx.config.server.host,
        scheme,
      }),
    );
    app.addHook('onRequest', createApiAuth({ token: options.apiToken as string, sessions, scheme }));
  }
  app.addHook('onSend', async (_request, reply, payload) => {
    reply.header('X-Content-Type-Options', 'nosniff');
    reply.header('Cross-Origin-Resource-Policy', 'same-origin');
    return payload;
  });

  app.setErrorHandler(handleError);
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '/';
    const allowed = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].filter(
      (m) => m !== request.method && known().find(m as 'GET', path) !== null,
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

  // Named schemas (`$id`) become `components.schemas` entries referenced by `$ref`.
  const namer = createSchemaNamer();
  await app.register(swagger, {
    transform: namer.transform,
    transformObject: namer.transformObject as never,
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Skep management API',
        version: ctx.version,
        description:
          'Run, share and secure MCP tool servers. Wire-compatible with the ToolHive `thv serve` API. ' +
          'Every error body is `{ "code", "message" }`; see the `Error` schema for the code table.',
      },
      components: {
        securitySchemes: {
          [BEARER_SCHEME]: {
            type: 'http',
            scheme: 'bearer',
            description:
              'The API token: `SKEP_API_TOKEN` of `skep serve`, or the `api-token` file in its state directory. ' +
              'Required on TCP for every route but `GET /health`; the unix socket needs none.',
          },
          [SESSION_SCHEME]: {
            type: 'apiKey',
            in: 'cookie',
            name: SESSION_COOKIE,
            description:
              'A browser session from a one-time login link (`POST /api/v1beta/auth/login-link`, `skep ui`); ' +
              "accepted only from the server's own pages (`Sec-Fetch-Site: same-origin`) and with the session's CSRF token " +
              'in `X-Skep-CSRF`, which the login gives the page (the docs page, opened by a link, needs only the cookie).',
          },
        },
      },
      security: [{ [BEARER_SCHEME]: [] }, { [SESSION_SCHEME]: [] }],
    },
  });

  for (const register of routeModules) await register(app, ctx);
  await authRoutes(app, {
    sessions,
    scheme,
    transport,
    ...(options.discoveryProofKey === undefined ? {} : { discoveryProofKey: options.discoveryProofKey }),
  });
  await uiRoutes(app, ctx, {
    sessions,
    scheme,
    transport,
    ...(options.apiToken === undefined ? {} : { apiToken: options.apiToken }),
  });
  // Rendered on the server from the OpenAPI document, on the first request (not at start-up).
  let docsPage: string | undefined;
  app.get('/api/doc', { schema: { hide: true } }, async (_request, reply) => {
    docsPage ??= renderDocsPage(app.swagger() as unknown as OpenApiDocument);
    return reply.type('text/html; charset=utf-8').header('Content-Security-Policy', DOCS_CSP).send(docsPage);
  });
  return app;
}
