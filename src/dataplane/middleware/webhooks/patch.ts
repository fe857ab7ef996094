/**
 * JSON Patch (RFC 6902) over JSON Pointers (RFC 6901), for mutating webhook answers (as ToolHive's
 * mutating webhooks answer). No JSON-patch library is in the dependency tree and the whole
 * algorithm is six operations over plain JSON values, so it is written here instead of adding one.
 * Three steps, each with its own error so the chain can answer with the reference's messages:
 * `decodePatch` (the answer is not a list of operation objects: "malformed"), `checkPatch` (an
 * operation is not one of the six or lacks a member it needs: "invalid"; a path outside
 * `/mcp_request/`: "scope"), `applyPatch` (a target that does not exist, a failed `test`: "apply").
 * Member names are set as own properties, so a patch naming `__proto__` adds a member called
 * `__proto__` rather than changing an object's prototype.
 */
import { type ErrorCode, isRecord } from '../../../shared/index.js';

export type PatchOperationName = 'add' | 'remove' | 'replace' | 'copy' | 'move' | 'test';

export interface PatchOperation {
  readonly op: string;
  readonly path: string;
  readonly from?: string;
  /** Present (possibly `null`) when the operation object had a `value` member. */
  readonly value?: unknown;
  readonly hasValue: boolean;
}

/** Why a patch was refused; `kind` picks the reference's message. */
export class PatchError extends Error {
  override readonly name = 'PatchError';
  /** A webhook (an upstream service) answered with a patch that cannot be used. */
  readonly code: ErrorCode = 'bad_gateway';
  constructor(
    readonly kind: 'malformed' | 'invalid' | 'scope' | 'apply',
    message: string,
  ) {
    super(message);
  }
}

const OPERATIONS = new Set<string>(['add', 'remove', 'replace', 'copy', 'move', 'test']);

/** The only part of the envelope `{"mcp_request": body}` a webhook may change (ToolHive's rule). */
export const MCP_REQUEST_PREFIX = '/mcp_request/';

/**
 * Reads the `patch` member of a mutating answer as a list of operations. Refuses what the
 * reference cannot decode into its operation type: not an array, an element that is not an
 * object, or `op`/`path`/`from` that are not strings.
 */
export function decodePatch(value: unknown): PatchOperation[] {
  if (!Array.isArray(value)) throw new PatchError('malformed', 'patch is not a JSON array');
  return value.map((entry, i) => {
    if (!isRecord(entry)) throw new PatchError('malformed', `patch[${i}] is not an object`);
    for (const member of ['op', 'path', 'from'] as const) {
      const v = entry[member];
      if (v !== undefined && v !== null && typeof v !== 'string')
        throw new PatchError('malformed', `patch[${i}].${member} is not a string`);
    }
    const hasValue = Object.hasOwn(entry, 'value');
    return {
      op: typeof entry['op'] === 'string' ? entry['op'] : '',
      path: typeof entry['path'] === 'string' ? entry['path'] : '',
      ...(typeof entry['from'] === 'string' ? { from: entry['from'] } : {}),
      ...(hasValue ? { value: entry['value'] } : {}),
      hasValue,
    };
  });
}

/**
 * RFC 6902 §4 member rules, then the scope rule: every `path` (and the `from` of `copy` and
 * `move`) starts with `/mcp_request/`, so a webhook changes the request only (never replaces
 * it wholesale, never touches the rest of the envelope).
 */
export function checkPatch(ops: readonly PatchOperation[]): void {
  ops.forEach((op, i) => {
    if (!OPERATIONS.has(op.op))
      throw new PatchError(
        'invalid',
        `patch[${i}]: unsupported op "${op.op}" (add, remove, replace, copy, move, test)`,
      );
    if (op.path === '') throw new PatchError('invalid', `patch[${i}]: path is required`);
    if ((op.op === 'copy' || op.op === 'move') && (op.from === undefined || op.from === ''))
      throw new PatchError('invalid', `patch[${i}]: ${op.op} requires "from"`);
    if ((op.op === 'add' || op.op === 'replace' || op.op === 'test') && !op.hasValue)
      throw new PatchError('invalid', `patch[${i}]: ${op.op} requires "value"`);
  });
  ops.forEach((op, i) => {
    if (!op.path.startsWith(MCP_REQUEST_PREFIX))
      throw new PatchError('scope', `patch[${i}]: path ${op.path} is outside ${MCP_REQUEST_PREFIX}`);
    if ((op.op === 'copy' || op.op === 'move') && !(op.from ?? '').startsWith(MCP_REQUEST_PREFIX))
      throw new PatchError('scope', `patch[${i}]: from ${op.from ?? ''} is outside ${MCP_REQUEST_PREFIX}`);
  });
}

/** RFC 6901 §3/§4: `/a~1b/c~0d` → `['a/b', 'c~d']`; '' is the whole document. */
export function parsePointer(pointer: string): string[] {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) throw new PatchError('apply', `"${pointer}" is not a JSON Pointer`);
  return pointer
    .slice(1)
    .split('/')
    .map((token) => {
      if (/~(?![01])/.test(token)) throw new PatchError('apply', `"${pointer}" has an invalid ~ escape`);
      return token.replace(/~1/g, '/').replace(/~0/g, '~');
    });
}

/** RFC 6901 §4: an array index is `0` or digits without a leading zero. */
function arrayIndex(token: string, length: number, pointer: string, allowEnd: boolean): number {
  if (allowEnd && token === '-') return length;
  if (!/^(0|[1-9]\d*)$/.test(token))
    throw new PatchError('apply', `${pointer}: "${token}" is not an array index`);
  const index = Number(token);
  if (index > length || (!allowEnd && index === length))
    throw new PatchError('apply', `${pointer}: index ${index} is out of range`);
  return index;
}

function child(container: unknown, token: string, pointer: string): unknown {
  if (Array.isArray(container)) return container[arrayIndex(token, container.length, pointer, false)];
  if (isRecord(container) && Object.hasOwn(container, token)) return container[token];
  throw new PatchError('apply', `${pointer} does not exist`);
}

function resolve(doc: unknown, tokens: readonly string[], pointer: string): unknown {
  let current = doc;
  for (const token of tokens) current = child(current, token, pointer);
  return current;
}

/** The container holding the last token, and that token. */
function parentOf(doc: unknown, pointer: string): { parent: unknown; key: string } {
  const tokens = parsePointer(pointer);
  const key = tokens.pop();
  if (key === undefined) throw new PatchError('apply', 'the whole document cannot be the target');
  return { parent: resolve(doc, tokens, pointer), key };
}

function setMember(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
}

function add(doc: unknown, pointer: string, value: unknown): void {
  const { parent, key } = parentOf(doc, pointer);
  if (Array.isArray(parent)) parent.splice(arrayIndex(key, parent.length, pointer, true), 0, value);
  else if (isRecord(parent)) setMember(parent, key, value);
  else throw new PatchError('apply', `${pointer}: the parent is not an object or array`);
}

function remove(doc: unknown, pointer: string): unknown {
  const { parent, key } = parentOf(doc, pointer);
  if (Array.isArray(parent)) return parent.splice(arrayIndex(key, parent.length, pointer, false), 1)[0];
  if (isRecord(parent) && Object.hasOwn(parent, key)) {
    const old = parent[key];
    delete parent[key];
    return old;
  }
  throw new PatchError('apply', `${pointer} does not exist`);
}

function replace(doc: unknown, pointer: string, value: unknown): void {
  const { parent, key } = parentOf(doc, pointer);
  if (Array.isArray(parent)) parent[arrayIndex(key, parent.length, pointer, false)] = value;
  else if (isRecord(parent) && Object.hasOwn(parent, key)) setMember(parent, key, value);
  else throw new PatchError('apply', `${pointer} does not exist`);
}

/** JSON equality (RFC 6902 §4.6): objects by members in any order, arrays in order. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a))
    return Array.isArray(b) && a.length === b.length && a.every((v, i) => jsonEqual(v, b[i]));
  if (isRecord(a) && isRecord(b)) {
    const keys = Object.keys(a);
    return (
      keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && jsonEqual(a[k], b[k]))
    );
  }
  return false;
}

/**
 * Applies checked operations in order to a copy of `doc` and returns it; `doc` is never
 * changed, so a failure part-way leaves the caller's value as it was (RFC 6902 §5: the patch
 * is applied as a whole or not at all).
 */
export function applyPatch<T>(doc: T, ops: readonly PatchOperation[]): T {
  const out = structuredClone(doc);
  ops.forEach((op, i) => {
    try {
      switch (op.op) {
        case 'add':
          add(out, op.path, structuredClone(op.value));
          break;
        case 'remove':
          remove(out, op.path);
          break;
        case 'replace':
          replace(out, op.path, structuredClone(op.value));
          break;
        case 'copy':
          add(out, op.path, structuredClone(resolve(out, parsePointer(op.from ?? ''), op.from ?? '')));
          break;
        case 'move': {
          const from = op.from ?? '';
          // RFC 6902 §4.4: a location cannot be moved into one of its own children.
          if (op.path.startsWith(`${from}/`))
            throw new PatchError('apply', `cannot move ${from} into its own child ${op.path}`);
          if (from !== op.path) add(out, op.path, remove(out, from));
          else resolve(out, parsePointer(from), from);
          break;
        }
        case 'test': {
          const actual = resolve(out, parsePointer(op.path), op.path);
          if (!jsonEqual(actual, op.value)) throw new PatchError('apply', `test failed at ${op.path}`);
          break;
        }
        default:
          throw new PatchError('invalid', `unsupported op "${op.op}"`);
      }
    } catch (err) {
      if (err instanceof PatchError) throw new PatchError(err.kind, `patch[${i}]: ${err.message}`);
      throw err;
    }
  });
  return out;
}
