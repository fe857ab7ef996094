export { ERROR_CODES, SkepError, isSkepError, describeError } from './errors.js';
export type { ErrorCode } from './errors.js';
export { createLogger, silentLogger } from './logger.js';
export type { Logger } from './logger.js';
export { writeFileAtomic, writeFileAtomicSync } from './fs.js';
export { SKEP_VERSION } from './version.js';
