export type {
  Runtime,
  RuntimeHealth,
  RuntimeName,
  ServerExit,
  ServerHandle,
  ServerSpec,
  ServerTransport,
} from './types.js';
