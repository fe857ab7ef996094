export type { ApiToken, ResolveApiTokenOptions } from './api-token.js';
export { API_TOKEN_ENV, resolveApiToken } from './api-token.js';
export type { SkepConfig } from './config.js';
export { loadConfig, parseConfig } from './config.js';
export type { SkepPaths } from './paths.js';
export { resolvePaths } from './paths.js';
