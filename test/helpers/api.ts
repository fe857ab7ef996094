/**
 * The management API in tests. On TCP every route but `/health` needs the API token, so the
 * apps built here send it by default, as a client that holds the token would: `inject`
 * adds `Authorization: Bearer <TEST_API_TOKEN>` unless the test passes its own
 * `authorization` header (an empty string sends none).
 */
import type { TestContext } from 'node:test';
import { type AppOptions, buildApp, type SkepApp } from '../../src/control/api/app.js';
import { type ApiContext, createContext } from '../../src/control/app/index.js';
import { API_TOKEN_ENV, resolveApiToken, resolvePaths } from '../../src/config/index.js';
import { type TempHome, tempHome } from './home.js';

/** The token of the apps built here (at least 32 characters, like any API token). */
export const TEST_API_TOKEN = 'skep-test-api-token-0123456789abcdefghijklmnop';

/** Headers that authenticate a request to a server that uses `token`. */
export function bearer(token: string = TEST_API_TOKEN): { authorization: string } {
  return { authorization: `Bearer ${token}` };
}

/** Makes `app.inject` send the bearer token unless a test sets `authorization` itself. */
export function authorizeInject(app: SkepApp, token: string = TEST_API_TOKEN): SkepApp {
  const inject = app.inject.bind(app) as (opts: object) => unknown;
  const withToken = (opts: { headers?: Record<string, unknown> }) => {
    const headers = { ...bearer(token), ...opts.headers };
    if (headers.authorization === '') delete (headers as { authorization?: string }).authorization;
    return inject({ ...opts, headers });
  };
  app.inject = withToken as unknown as SkepApp['inject'];
  return app;
}

/** `buildApp` with the test token (TCP), its `inject` sending the token by default. */
export async function buildTestApp(ctx: ApiContext, options: AppOptions = {}): Promise<SkepApp> {
  return authorizeInject(await buildApp(ctx, { apiToken: TEST_API_TOKEN, ...options }));
}

export async function testApp(
  t: TestContext,
  options: AppOptions = {},
): Promise<{ app: SkepApp; ctx: ApiContext; home: TempHome }> {
  const home = tempHome(t);
  const ctx = createContext(home.config);
  const app = await buildTestApp(ctx, options);
  t.after(async () => {
    await app.close();
    await ctx.close();
  });
  return { app, ctx, home };
}

/**
 * The API token of a `skep serve` started with `env`, found as a user's client would:
 * `SKEP_API_TOKEN`, else the token file in its state directory.
 */
export function apiTokenFor(env: NodeJS.ProcessEnv): string {
  const found = resolveApiToken(resolvePaths(env), env);
  if (found === undefined) throw new Error(`no ${API_TOKEN_ENV} and no token file for this home`);
  return found.token;
}
