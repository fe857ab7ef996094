/** Builds the domain services for one CLI command and closes them afterwards. */
import { type ApiContext, createContext } from '../api/context.js';
import { loadConfig } from '../config/index.js';

export async function withContext<T>(fn: (ctx: ApiContext) => Promise<T> | T): Promise<T> {
  const ctx = createContext(loadConfig());
  try {
    return await fn(ctx);
  } finally {
    await ctx.close();
  }
}
