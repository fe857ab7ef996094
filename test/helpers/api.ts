/** Builds the management API on a temp home for `inject()` tests. */
import type { TestContext } from 'node:test';
import { buildApp, type SkepApp } from '../../src/api/app.js';
import { type ApiContext, createContext } from '../../src/api/context.js';
import { type TempHome, tempHome } from './home.js';

export async function testApp(t: TestContext): Promise<{ app: SkepApp; ctx: ApiContext; home: TempHome }> {
  const home = tempHome(t);
  const ctx = createContext(home.config);
  const app = await buildApp(ctx);
  t.after(async () => {
    await app.close();
    await ctx.close();
  });
  return { app, ctx, home };
}
