/** Skep's built-in catalog, as an upstream registry document (what `type: default` serves). */
import type { RegistryDocument } from '../../schemas/registry/index.js';
import { BUILTIN_GROUPS } from './groups.js';
import { BUILTIN_SERVERS } from './servers.js';
import { BUILTIN_SKILLS } from './skills.js';

/** Bump with any change to the catalog content. */
const CATALOG_VERSION = '1.1.0';
const CATALOG_UPDATED = '2026-11-24T00:00:00Z';

export function builtinDocument(): RegistryDocument {
  return {
    $schema:
      'https://raw.githubusercontent.com/stacklok/toolhive-core/main/registry/types/data/upstream-registry.schema.json',
    version: CATALOG_VERSION,
    meta: { last_updated: CATALOG_UPDATED },
    data: {
      servers: structuredClone([...BUILTIN_SERVERS]),
      skills: structuredClone([...BUILTIN_SKILLS]),
      groups: structuredClone([...BUILTIN_GROUPS]),
    },
  };
}
