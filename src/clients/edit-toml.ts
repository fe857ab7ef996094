/**
 * Edits of TOML client configs (codex: tables `[mcp_servers.<name>]`; mistral-vibe: an array
 * of tables `[[mcp_servers]]` identified by `name`). smol-toml can only parse and print whole
 * documents, which would drop every comment, so Skep edits the text: a small scanner finds
 * the table headers (outside strings and multi-line values), and only Skep's own tables are
 * replaced, removed or appended. Everything else (comments, order, spacing, other tables)
 * is kept byte for byte. The result is parsed again and compared with the expected data; if
 * an unusual layout (dotted keys, inline tables) defeats the textual edit, the expected data
 * is printed whole instead, which is correct but drops comments.
 */
import { isDeepStrictEqual } from 'node:util';
import { parse as parseToml, stringify as stringifyToml } from 'smol-toml';
import { SkepError } from '../shared/index.js';
import type { ServerEntry } from './catalog.js';
import type { EntryChanges } from './edit-types.js';

type Table = Record<string, unknown>;

interface Section {
  /** Where the section's text starts: the blank lines before its header belong to it. */
  start: number;
  headerStart: number;
  end: number;
  array: boolean;
  keys: string[];
}

export function editToml(
  text: string,
  kind: 'toml-map' | 'toml-list',
  path: readonly string[],
  changes: EntryChanges,
  file: string,
): string {
  const expected = parse(text, file);
  const current = entriesOf(parse(text, file), kind, path, file);
  const eol = text.includes('\r\n') ? '\r\n' : '\n';
  const sections = scanSections(text);
  const edits: { offset: number; length: number; text: string }[] = [];
  const appends: string[] = [];

  const names = new Set([...changes.remove, ...changes.upsert.keys()]);
  for (const name of names) {
    const entry = changes.upsert.get(name);
    const existing = current.get(name);
    if (entry === undefined && existing === undefined) continue;
    if (entry !== undefined && existing !== undefined && isDeepStrictEqual(existing.value, entry)) continue;
    applyToData(expected, kind, path, name, entry, file);
    const group = existing === undefined ? [] : groupOf(sections, kind, path, name, existing.index);
    const rendered = entry === undefined ? '' : render(kind, path, name, entry, eol);
    if (group.length === 0) {
      if (entry !== undefined) appends.push(rendered);
      continue;
    }
    group.forEach((s, i) => {
      if (i === 0 && entry !== undefined)
        edits.push({ offset: s.headerStart, length: s.end - s.headerStart, text: rendered });
      else edits.push({ offset: s.start, length: s.end - s.start, text: '' });
    });
  }
  if (edits.length === 0 && appends.length === 0) return text;

  let out = text;
  for (const e of edits.sort((a, b) => b.offset - a.offset)) {
    out = out.slice(0, e.offset) + e.text + out.slice(e.offset + e.length);
  }
  for (const block of appends) {
    if (out.length > 0 && !out.endsWith('\n')) out += eol;
    out += (out.trim().length > 0 ? eol : '') + block;
  }
  let check: Table | undefined;
  try {
    check = toPlain(parseToml(out)) as Table;
  } catch {
    check = undefined;
  }
  return check !== undefined && isDeepStrictEqual(check, expected) ? out : stringifyToml(expected);
}

export function readTomlEntries(
  text: string,
  kind: 'toml-map' | 'toml-list',
  path: readonly string[],
  file: string,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, { value }] of entriesOf(parse(text, file), kind, path, file)) out[name] = value;
  return out;
}

/** smol-toml builds null-prototype objects; plain ones compare equal to what Skep builds. */
function toPlain(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(toPlain);
  if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, toPlain(v)]));
  }
  return value;
}

function parse(text: string, file: string): Table {
  try {
    return toPlain(parseToml(text)) as Table;
  } catch (err) {
    const first = (err as Error).message.split('\n')[0];
    throw new SkepError(
      'client_config_invalid',
      `${file} is not valid TOML (${first}); fix the file and retry`,
      {
        cause: err,
      },
    );
  }
}

function at(data: Table, path: readonly string[]): unknown {
  let node: unknown = data;
  for (const key of path) {
    if (node === null || typeof node !== 'object' || Array.isArray(node)) return undefined;
    node = (node as Table)[key];
  }
  return node;
}

function entriesOf(
  data: Table,
  kind: 'toml-map' | 'toml-list',
  path: readonly string[],
  file: string,
): Map<string, { value: unknown; index: number }> {
  const node = at(data, path);
  const out = new Map<string, { value: unknown; index: number }>();
  if (node === undefined) return out;
  if (kind === 'toml-map') {
    if (node === null || typeof node !== 'object' || Array.isArray(node)) {
      throw new SkepError('client_config_invalid', `${file}: "${path.join('.')}" is not a table`);
    }
    for (const [name, value] of Object.entries(node as Table)) out.set(name, { value, index: -1 });
    return out;
  }
  if (!Array.isArray(node)) {
    throw new SkepError('client_config_invalid', `${file}: "${path.join('.')}" is not an array of tables`);
  }
  node.forEach((value: unknown, index) => {
    const name = (value as Table | null)?.['name'];
    if (typeof name === 'string' && !out.has(name)) out.set(name, { value, index });
  });
  return out;
}

function applyToData(
  data: Table,
  kind: 'toml-map' | 'toml-list',
  path: readonly string[],
  name: string,
  entry: ServerEntry | undefined,
  file: string,
): void {
  let parent: Table = data;
  for (const key of path.slice(0, -1)) {
    parent[key] ??= {};
    parent = parent[key] as Table;
  }
  const last = path[path.length - 1]!;
  if (kind === 'toml-map') {
    if (parent[last] === undefined) parent[last] = {};
    const map = parent[last] as Table;
    if (entry === undefined) delete map[name];
    else map[name] = { ...entry };
    return;
  }
  if (parent[last] === undefined) parent[last] = [];
  const list = parent[last] as Table[];
  if (!Array.isArray(list))
    throw new SkepError('client_config_invalid', `${file}: "${path.join('.')}" is not an array`);
  const index = list.findIndex((t) => t?.['name'] === name);
  if (entry === undefined) {
    if (index >= 0) list.splice(index, 1);
  } else if (index >= 0) list[index] = { ...entry };
  else list.push({ ...entry });
}

/** The sections that make up one entry: its own table and any sub-tables of it. */
function groupOf(
  sections: Section[],
  kind: 'toml-map' | 'toml-list',
  path: readonly string[],
  name: string,
  index: number,
): Section[] {
  if (kind === 'toml-map') {
    const own = [...path, name];
    return sections.filter((s) => startsWith(s.keys, own) && !(s.array && s.keys.length === own.length));
  }
  const heads = sections.filter((s) => s.array && equal(s.keys, path));
  const head = heads[index];
  if (head === undefined) return [];
  const out = [head];
  for (let i = sections.indexOf(head) + 1; i < sections.length; i++) {
    const s = sections[i]!;
    if (s.keys.length > path.length && startsWith(s.keys, path)) out.push(s);
    else break;
  }
  return out;
}

function render(
  kind: 'toml-map' | 'toml-list',
  path: readonly string[],
  name: string,
  entry: ServerEntry,
  eol: string,
): string {
  const header =
    kind === 'toml-map'
      ? `[${[...path, name].map(tomlKey).join('.')}]`
      : `[[${path.map(tomlKey).join('.')}]]`;
  const body = stringifyToml(entry).trimEnd().split('\n').join(eol);
  return `${header}${eol}${body}${eol}`;
}

function tomlKey(key: string): string {
  return /^[A-Za-z0-9_-]+$/.test(key) ? key : JSON.stringify(key);
}

function startsWith(keys: string[], prefix: readonly string[]): boolean {
  return prefix.length <= keys.length && prefix.every((k, i) => keys[i] === k);
}

function equal(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && startsWith([...a], b);
}

/**
 * Finds table headers: lines that start with `[` outside strings, comments and multi-line
 * arrays or inline tables.
 */
export function scanSections(text: string): Section[] {
  const headers: Omit<Section, 'start' | 'end'>[] = [];
  let i = 0;
  let depth = 0;
  let lineStart = true;
  const n = text.length;
  while (i < n) {
    const c = text[i]!;
    if (lineStart && depth === 0) {
      let j = i;
      while (j < n && (text[j] === ' ' || text[j] === '\t')) j++;
      if (text[j] === '[') {
        const header = parseHeader(text, j);
        headers.push({ headerStart: i, array: header.array, keys: header.keys });
        i = header.end;
        lineStart = false;
        continue;
      }
    }
    lineStart = false;
    if (c === '\n') {
      lineStart = true;
      i++;
    } else if (c === '#') {
      while (i < n && text[i] !== '\n') i++;
    } else if (text.startsWith('"""', i) || text.startsWith("'''", i)) {
      const quote = text.slice(i, i + 3);
      i += 3;
      for (;;) {
        const end = text.indexOf(quote, i);
        if (end < 0) return finish(text, headers);
        if (quote === '"""' && escaped(text, end)) {
          i = end + 1;
          continue;
        }
        i = end + 3;
        while (text[i] === quote[0]) i++;
        break;
      }
    } else if (c === '"' || c === "'") {
      i++;
      while (i < n && text[i] !== '\n') {
        if (c === '"' && text[i] === '\\') i += 2;
        else if (text[i] === c) break;
        else i++;
      }
      i++;
    } else {
      if (c === '[' || c === '{') depth++;
      else if ((c === ']' || c === '}') && depth > 0) depth--;
      i++;
    }
  }
  return finish(text, headers);
}

function escaped(text: string, at: number): boolean {
  let backslashes = 0;
  for (let k = at - 1; k >= 0 && text[k] === '\\'; k--) backslashes++;
  return backslashes % 2 === 1;
}

function finish(text: string, headers: Omit<Section, 'start' | 'end'>[]): Section[] {
  const sections = headers.map((h) => ({
    ...h,
    start: leadingBlankStart(text, h.headerStart),
    end: text.length,
  }));
  for (let k = 0; k + 1 < sections.length; k++) sections[k]!.end = sections[k + 1]!.start;
  return sections;
}

/** Moves a header's start back over the blank lines right before it. */
function leadingBlankStart(text: string, headerStart: number): number {
  let start = headerStart;
  for (;;) {
    if (start === 0) return 0;
    const prevLineStart = text.lastIndexOf('\n', start - 2) + 1;
    if (text.slice(prevLineStart, start).trim() !== '') return start;
    start = prevLineStart;
  }
}

function parseHeader(text: string, at: number): { array: boolean; keys: string[]; end: number } {
  const array = text[at + 1] === '[';
  let i = at + (array ? 2 : 1);
  const keys: string[] = [];
  const skip = () => {
    while (text[i] === ' ' || text[i] === '\t') i++;
  };
  for (;;) {
    skip();
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      keys.push(JSON.parse(text.slice(i, j + 1)) as string);
      i = j + 1;
    } else if (c === "'") {
      const j = text.indexOf("'", i + 1);
      keys.push(text.slice(i + 1, j));
      i = j + 1;
    } else {
      const m = /^[A-Za-z0-9_-]+/.exec(text.slice(i, i + 256));
      keys.push(m?.[0] ?? '');
      i += m?.[0].length ?? 0;
    }
    skip();
    if (text[i] === '.') {
      i++;
      continue;
    }
    break;
  }
  const close = text.indexOf('\n', i);
  return { array, keys, end: close < 0 ? text.length : close };
}
