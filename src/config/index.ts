export type { SkepConfig } from './config.js';
export { ConfigSchema, loadConfig, parseConfig } from './config.js';
export type { SkepPaths } from './paths.js';
export { resolvePaths } from './paths.js';
