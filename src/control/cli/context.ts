/**
 * Builds the domain services for one CLI command and closes them afterwards. The composition
 * root and the config loader are imported when a command asks for them, so a command that
 * needs neither (`skep version`, `--help`) does not load them.
 */
import type { ApiContext } from '../app/index.js';

export async function withContext<T>(fn: (ctx: ApiContext) => Promise<T> | T): Promise<T> {
  const [{ createContext }, { loadConfig }] = await Promise.all([
    import('../app/index.js'),
    import('../../config/index.js'),
  ]);
  const ctx = createContext(loadConfig());
  try {
    return await fn(ctx);
  } finally {
    await ctx.close();
  }
}
