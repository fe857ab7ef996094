/** The registry domain: the built-in catalog, sources, the native and catalog views, search. */
export { refreshTokenSecretName, type RegistryTokenStore } from './auth.js';
export { builtinDocument } from './catalog/index.js';
export { InvalidRegistryError } from './document.js';
export {
  CatalogServer,
  CatalogSkill,
  type FoundServer,
  ImageServer,
  type NativeRegistry,
  type RegistryDocument,
  RegistryGroup,
  type RegistryInfo,
  RemoteServer,
  type SourceType,
} from '../schemas/registry/index.js';
export { DEFAULT_LIMIT, MAX_LIMIT, normalizePaging, type Page, RegistryIndex } from './search.js';
export {
  type AuthInfo,
  type AuthUpdate,
  DEFAULT_REGISTRY,
  type ListQuery,
  RegistryService,
  type RegistryServiceOptions,
  type SourceUpdate,
  type StoredSourceConfig,
} from './service.js';
export { readRegistryFile } from './sources.js';
