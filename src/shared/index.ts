export type { ErrorCode } from './errors.js';
export { describeError, ERROR_CODES, isSkepError, SkepError } from './errors.js';
export { writeFileAtomic, writeFileAtomicSync } from './fs.js';
export { lazyRequire } from './lazy.js';
export type { Logger } from './logger.js';
export { createLogger, silentLogger } from './logger.js';
export { SKEP_VERSION } from './version.js';
export { sleepUnlessAborted } from './sleep.js';
