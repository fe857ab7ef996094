/**
 * Reading a registry document (file, URL body, or pages of a v0.1 API) into the internal
 * model. Only the upstream wrapper `{version, meta, data: {servers, skills}}` is accepted;
 * the legacy ToolHive shape (top-level `servers` / `remote_servers` maps) is refused with
 * a message that says so (skills-registry-secrets-clients.md §2.1).
 */
import { createValidator } from '../schemas/index.js';
import { CatalogServer, CatalogSkill, RegistryDocument } from './model.js';

/** Content that is not a usable registry: maps to 502 when a source is being set. */
export class InvalidRegistryError extends Error {
  override readonly name = 'InvalidRegistryError';
}

const documentValidator = createValidator(RegistryDocument);
const serverValidator = createValidator(CatalogServer);
const skillValidator = createValidator(CatalogSkill);

const MAX_PROBLEMS = 5;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Parses JSON text; throws `InvalidRegistryError` naming `where`. */
export function parseJson(text: string, where: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new InvalidRegistryError(`${where} is not valid JSON: ${(err as Error).message}`);
  }
}

/** Validates a whole registry document; every problem (up to 5) is named by its JSON path. */
export function toRegistryDocument(value: unknown, where: string): RegistryDocument {
  if (!isObject(value)) throw new InvalidRegistryError(`${where} is not a JSON object`);
  if (!isObject(value['data']) && ('servers' in value || 'remote_servers' in value || 'groups' in value)) {
    throw new InvalidRegistryError(
      `${where} is in the legacy ToolHive format (top-level servers/remote_servers); ` +
        'convert it to the upstream MCP registry format {version, meta, data: {servers: [server.json...]}}',
    );
  }
  const problems = documentValidator.problems(value);
  if (problems.length > 0) {
    const more = problems.length > MAX_PROBLEMS ? ` (and ${problems.length - MAX_PROBLEMS} more)` : '';
    throw new InvalidRegistryError(
      `${where} fails validation: ${problems.slice(0, MAX_PROBLEMS).join('; ')}${more}`,
    );
  }
  const doc = value as RegistryDocument;
  if (doc.data.servers.length === 0 && (doc.data.skills?.length ?? 0) === 0) {
    throw new InvalidRegistryError(`${where} contains no servers and no skills`);
  }
  return doc;
}

/** Validates one server of a paged API answer. */
export function toCatalogServer(value: unknown, where: string): CatalogServer {
  const problems = serverValidator.problems(value);
  if (problems.length > 0)
    throw new InvalidRegistryError(
      `${where} fails validation: ${problems.slice(0, MAX_PROBLEMS).join('; ')}`,
    );
  return value as CatalogServer;
}

/** Validates one skill of a paged API answer. */
export function toCatalogSkill(value: unknown, where: string): CatalogSkill {
  const problems = skillValidator.problems(value);
  if (problems.length > 0)
    throw new InvalidRegistryError(
      `${where} fails validation: ${problems.slice(0, MAX_PROBLEMS).join('; ')}`,
    );
  return value as CatalogSkill;
}
