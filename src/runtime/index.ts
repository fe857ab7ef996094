export type { LogFileOptions } from './log-file.js';
export { RotatingLogFile } from './log-file.js';
export type { ProcessCommand, ProcessRuntimeOptions } from './process.js';
export { ProcessRuntime, processCommand } from './process.js';
export type {
  Runtime,
  RuntimeHealth,
  RuntimeName,
  ServerExit,
  ServerHandle,
  ServerSpec,
  ServerTransport,
} from './types.js';
