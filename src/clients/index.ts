/** IDE and agent clients: the catalog, registration, config writers and live sync. */

export type {
  ClientDefinition,
  ClientTransport,
  ConfigFormat,
  ServerEntry,
  ServersLayout,
} from './catalog.js';
export { CLIENTS, clientDefinition, isClientType } from './catalog.js';
export { BACKUP_SUFFIX, editConfigText, readConfigEntries } from './config-file.js';
export type { ClientsServiceOptions, ListWorkloads, SyncResult, WorkloadEndpoint } from './service.js';
export { ClientsService, clientTransport, desiredEntries } from './service.js';
export type { ClientRegistration, ClientStatus, ClientType } from '../schemas/clients/index.js';
export { CLIENT_TYPES } from '../schemas/clients/index.js';
