/**
 * Reading a registry document (file, URL body, or pages of a v0.1 API) into the internal
 * model. Only the upstream wrapper `{version, meta, data: {servers, skills}}` is accepted;
 * the legacy ToolHive shape (top-level `servers` / `remote_servers` maps) is refused with
 * a message that says so (ToolHive reads both; Skep reads only the upstream format).
 */
import { createValidator } from '../validation/index.js';
import { type ErrorCode, isRecord, jsonSyntaxError } from '../shared/index.js';
import { CatalogServer, CatalogSkill, RegistryDocument, RegistryGroup } from '../schemas/registry/index.js';

/** Content that is not a usable registry: maps to 502 when a source is being set. */
export class InvalidRegistryError extends Error {
  override readonly name = 'InvalidRegistryError';
  readonly code: ErrorCode = 'registry_invalid';
}

const documentValidator = createValidator(RegistryDocument);
const serverValidator = createValidator(CatalogServer);
const skillValidator = createValidator(CatalogSkill);
const groupValidator = createValidator(RegistryGroup);

const MAX_PROBLEMS = 5;

/**
 * Throws `InvalidRegistryError` naming the first problems (and, with `countMore`, how many
 * more there are); does nothing when there are none.
 */
function throwProblems(problems: readonly string[], where: string, countMore = true): void {
  if (problems.length === 0) return;
  const more =
    countMore && problems.length > MAX_PROBLEMS ? ` (and ${problems.length - MAX_PROBLEMS} more)` : '';
  throw new InvalidRegistryError(
    `${where} fails validation: ${problems.slice(0, MAX_PROBLEMS).join('; ')}${more}`,
  );
}

/**
 * Parses JSON text; throws `InvalidRegistryError` naming `where`. The message never quotes
 * the text: `where` may be any file the caller pointed at, and V8's own
 * message repeats its first bytes (`"root:*:202"... is not valid JSON` for /etc/shadow).
 */
export function parseJson(text: string, where: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    const first = text.trimStart()[0];
    if (first !== '{' && first !== '[')
      throw new InvalidRegistryError(`${where} is not JSON (a registry document is a JSON object)`);
    throw new InvalidRegistryError(`${where} is not valid JSON (${jsonSyntaxError(text, err)})`);
  }
}

const EXPECTED_SHAPE = 'expected {version, meta, data: {servers: [server.json...]}}';

/**
 * Validates a whole registry document; every problem (up to 5) is named by its JSON path.
 * JSON that is not shaped like a registry at all is refused before validation, with a
 * message that names no field of it (F6: it may be any JSON file on the machine).
 */
export function toRegistryDocument(
  value: unknown,
  where: string,
  options: { allowEmpty?: boolean } = {},
): RegistryDocument {
  if (!isRecord(value))
    throw new InvalidRegistryError(
      `${where} is not a registry document: not a JSON object (${EXPECTED_SHAPE})`,
    );
  if (!isRecord(value['data']) && ('servers' in value || 'remote_servers' in value || 'groups' in value)) {
    throw new InvalidRegistryError(
      `${where} is in the legacy ToolHive format (top-level servers/remote_servers); ` +
        `convert it to the upstream MCP registry format ${EXPECTED_SHAPE}`,
    );
  }
  const data = value['data'];
  if (!isRecord(data) || !Array.isArray(data['servers']))
    throw new InvalidRegistryError(
      `${where} is not a registry document: missing data.servers (${EXPECTED_SHAPE})`,
    );
  throwProblems(documentValidator.problems(value), where);
  const doc = value as RegistryDocument;
  if (options.allowEmpty !== true && doc.data.servers.length === 0 && (doc.data.skills?.length ?? 0) === 0) {
    throw new InvalidRegistryError(`${where} contains no servers and no skills`);
  }
  checkGroups(doc.data.groups, doc.data.servers, where);
  return doc;
}

/**
 * `data.groups` (Skep's extension): names unique, every member a runnable server of the same
 * document named by its full name, no member twice. Problems are named by their JSON path.
 */
export function checkGroups(
  groups: readonly RegistryGroup[] | undefined,
  servers: readonly CatalogServer[],
  where: string,
): void {
  if (groups === undefined || groups.length === 0) return;
  const runnable = new Set(
    servers.filter((s) => (s.remotes?.length ?? 0) > 0 || (s.packages?.length ?? 0) > 0).map((s) => s.name),
  );
  const problems: string[] = [];
  const seen = new Set<string>();
  groups.forEach((group, i) => {
    if (seen.has(group.name)) problems.push(`data.groups.${i}.name: group ${group.name} is defined twice`);
    seen.add(group.name);
    const members = new Set<string>();
    group.servers.forEach((member, j) => {
      const path = `data.groups.${i}.servers.${j}`;
      if (members.has(member)) problems.push(`${path}: ${member} is listed twice`);
      else if (!runnable.has(member))
        problems.push(
          `${path}: ${member} is not a server of data.servers with a package or a remote (use its full name)`,
        );
      members.add(member);
    });
  });
  throwProblems(problems, where);
}

/** Validates one server of a paged API answer. */
export function toCatalogServer(value: unknown, where: string): CatalogServer {
  throwProblems(serverValidator.problems(value), where, false);
  return value as CatalogServer;
}

/** Validates one skill of a paged API answer. */
export function toCatalogSkill(value: unknown, where: string): CatalogSkill {
  throwProblems(skillValidator.problems(value), where, false);
  return value as CatalogSkill;
}

/** Validates one group of an API's groups answer (members are checked by `checkGroups`). */
export function toRegistryGroup(value: unknown, where: string): RegistryGroup {
  throwProblems(groupValidator.problems(value), where, false);
  return value as RegistryGroup;
}
