export { resolvePaths } from './paths.js';
export type { SkepPaths } from './paths.js';
export { ConfigSchema, loadConfig, parseConfig } from './config.js';
export type { SkepConfig } from './config.js';
