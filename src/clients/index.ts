/** IDE and agent clients: the catalog, registration, config writers and live sync. */

export type {
  ClientDefinition,
  ClientTransport,
  ClientType,
  ConfigFormat,
  ServerEntry,
  ServersLayout,
} from './catalog.js';
export { CLIENT_TYPES, CLIENTS, clientDefinition, isClientType } from './catalog.js';
export { BACKUP_SUFFIX, editConfigText, readConfigEntries } from './config-file.js';
export type {
  ClientRegistration,
  ClientStatus,
  ClientsServiceOptions,
  ListWorkloads,
  SyncResult,
  WorkloadEndpoint,
} from './service.js';
export { ClientsService, clientTransport, desiredEntries } from './service.js';
