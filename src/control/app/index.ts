/**
 * The composition root of the control plane: builds the domain services from the config.
 * `skep serve` (the HTTP API) and the CLI both start here, so a CLI command loads no HTTP
 * layer, and a command that needs one service (`skep list`) builds only that one.
 */
export type { ApiContext, ContextOptions } from './context.js';
export { createContext, registryResolver, registryTokenStore } from './context.js';
export { listWorkloads } from './workload-list.js';
