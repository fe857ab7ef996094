/** The registry's model (MCP registry `server.json` objects and the native views' shapes). */
export type { FoundServer, NativeGroup, NativeRegistry, RegistryInfo, SourceType } from './model.js';
export {
  Argument,
  CatalogServer,
  CatalogSkill,
  EnvVar,
  EXTENSION_KEY,
  Header,
  ImageServer,
  NamedInput,
  PUBLISHER_META_KEY,
  RegistryDocument,
  RegistryGroup,
  RemoteServer,
  SERVER_SCHEMA_URL,
  ServerExtension,
} from './model.js';
