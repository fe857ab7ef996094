/**
 * In-place edits of JSON and JSON-with-comments client configs. Only the server entries Skep
 * changes are touched: an insert appends one property after the last one, with the file's own
 * indentation and line ending; a removal deletes exactly that property and its separating
 * comma. Every other byte (comments, key order, spacing, trailing commas) stays as it was, so
 * an insert followed by a removal gives back the original file.
 */

import { isDeepStrictEqual } from 'node:util';
import {
  createScanner,
  getNodeValue,
  type Node,
  type ParseError,
  parseTree,
  printParseErrorCode,
} from 'jsonc-parser';
import { SkepError } from '../shared/index.js';
import type { EntryChanges } from './edit-types.js';

interface Style {
  unit: string;
  eol: string;
}

/** jsonc-parser's SyntaxKind values we look for (a const enum, which verbatimModuleSyntax cannot import). */
const COMMA_TOKEN = 5;
const EOF_TOKEN = 17;
const TRIVIA_TOKENS = new Set([12, 13, 14, 15]);

interface Edit {
  offset: number;
  length: number;
  text: string;
}

export function editJson(text: string, path: readonly string[], changes: EntryChanges, file: string): string {
  if (text.trim() === '') {
    if (changes.upsert.size === 0) return text;
    let value: Record<string, unknown> = Object.fromEntries(changes.upsert);
    for (let i = path.length - 1; i >= 0; i--) value = { [path[i]!]: value };
    return `${JSON.stringify(value, null, 2)}\n`;
  }
  const style = detectStyle(text);
  const names = new Set([...changes.remove, ...changes.upsert.keys()]);
  for (const name of names) {
    const entry = changes.upsert.get(name);
    text =
      entry === undefined
        ? removeProperty(text, path, name, file)
        : upsertProperty(text, path, name, entry, style, file);
  }
  return text;
}

/** Reads the server entries under `path` (for tests and status). */
export function readJsonEntries(
  text: string,
  path: readonly string[],
  file: string,
): Record<string, unknown> {
  if (text.trim() === '') return {};
  const container = locate(parse(text, file), path, file);
  if (container === undefined) return {};
  return getNodeValue(container) as Record<string, unknown>;
}

function parse(text: string, file: string): Node {
  const errors: ParseError[] = [];
  const root = parseTree(text, errors, { allowTrailingComma: true, disallowComments: false });
  const first = errors[0];
  if (first !== undefined || root === undefined) {
    const where =
      first === undefined ? '' : ` at offset ${first.offset}: ${printParseErrorCode(first.error)}`;
    throw new SkepError('client_config_invalid', `${file} is not valid JSON${where}; fix the file and retry`);
  }
  if (root.type !== 'object') {
    throw new SkepError('client_config_invalid', `${file} does not hold a JSON object at the top level`);
  }
  return root;
}

/** The object node at `path`, undefined when some part is missing; a non-object on the way is an error. */
function locate(root: Node, path: readonly string[], file: string): Node | undefined {
  let node = root;
  for (const key of path) {
    const child = property(node, key)?.children?.[1];
    if (child === undefined) return undefined;
    if (child.type !== 'object') {
      throw new SkepError('client_config_invalid', `${file}: "${path.join('.')}" is not a JSON object`);
    }
    node = child;
  }
  return node;
}

function property(object: Node, key: string): Node | undefined {
  return object.children?.find((p) => p.children?.[0]?.value === key);
}

function upsertProperty(
  text: string,
  path: readonly string[],
  name: string,
  entry: unknown,
  style: Style,
  file: string,
): string {
  const root = parse(text, file);
  // Walk down as far as the path exists; the rest is created as one nested value.
  let node = root;
  let depth = 0;
  for (; depth < path.length; depth++) {
    const child = property(node, path[depth]!)?.children?.[1];
    if (child === undefined) break;
    if (child.type !== 'object') {
      throw new SkepError('client_config_invalid', `${file}: "${path.join('.')}" is not a JSON object`);
    }
    node = child;
  }
  if (depth === path.length) {
    const existing = property(node, name);
    const valueNode = existing?.children?.[1];
    if (existing !== undefined && valueNode !== undefined) {
      if (isDeepStrictEqual(getNodeValue(valueNode), entry)) return text;
      const indent = lineIndent(text, existing.offset);
      return apply(text, [
        { offset: valueNode.offset, length: valueNode.length, text: render(entry, indent, style) },
      ]);
    }
    return apply(text, insertProperty(text, node, name, entry, style));
  }
  let value: unknown = { [name]: entry };
  for (let i = path.length - 1; i > depth; i--) value = { [path[i]!]: value };
  return apply(text, insertProperty(text, node, path[depth]!, value, style));
}

function insertProperty(text: string, object: Node, key: string, value: unknown, style: Style): Edit[] {
  const children = object.children ?? [];
  const last = children[children.length - 1];
  if (last === undefined) {
    // Empty object: put the property on its own line between the braces.
    const indent = lineIndent(text, object.offset);
    const inner = indent + style.unit;
    const body = `${style.eol}${inner}${JSON.stringify(key)}: ${render(value, inner, style)}${style.eol}${indent}`;
    return [{ offset: object.offset + 1, length: object.length - 2, text: body }];
  }
  const indent = lineIndent(text, last.offset);
  const prop = `${JSON.stringify(key)}: ${render(value, indent, style)}`;
  const end = last.offset + last.length;
  const comma = nextToken(text, end);
  if (comma?.kind === COMMA_TOKEN) {
    // The file uses a trailing comma after its last property: keep that style.
    return [{ offset: comma.offset + 1, length: 0, text: `${style.eol}${indent}${prop},` }];
  }
  return [{ offset: end, length: 0, text: `,${style.eol}${indent}${prop}` }];
}

function removeProperty(text: string, path: readonly string[], name: string, file: string): string {
  const container = locate(parse(text, file), path, file);
  if (container === undefined) return text;
  const children = container.children ?? [];
  const index = children.findIndex((p) => p.children?.[0]?.value === name);
  const prop = children[index];
  if (prop === undefined) return text;
  const lineStart = text.lastIndexOf('\n', prop.offset - 1) + 1;
  // Take the line break before the property too when the property starts its own line.
  let start = prop.offset;
  if (text.slice(lineStart, prop.offset).trim() === '' && lineStart > 0) {
    start = lineStart - 1;
    if (text[start - 1] === '\r') start -= 1;
  }
  const edits: Edit[] = [];
  const after = nextToken(text, prop.offset + prop.length);
  if (after?.kind === COMMA_TOKEN) {
    edits.push({ offset: start, length: after.offset + 1 - start, text: '' });
  } else {
    edits.push({ offset: start, length: prop.offset + prop.length - start, text: '' });
    const previous = children[index - 1];
    if (previous !== undefined) {
      const comma = nextToken(text, previous.offset + previous.length);
      if (comma?.kind === COMMA_TOKEN) edits.push({ offset: comma.offset, length: 1, text: '' });
    }
  }
  let out = apply(text, edits);
  if (children.length === 1) {
    // The object is now empty: collapse whatever whitespace is left between its braces.
    const emptied = locate(parse(out, file), path, file);
    if (
      emptied !== undefined &&
      out.slice(emptied.offset + 1, emptied.offset + emptied.length - 1).trim() === ''
    ) {
      out = apply(out, [{ offset: emptied.offset + 1, length: emptied.length - 2, text: '' }]);
    }
  }
  return out;
}

function nextToken(text: string, offset: number): { kind: number; offset: number } | undefined {
  const scanner = createScanner(text, false);
  scanner.setPosition(offset);
  for (;;) {
    const kind: number = scanner.scan();
    if (kind === EOF_TOKEN) return undefined;
    if (TRIVIA_TOKENS.has(kind)) continue;
    return { kind, offset: scanner.getTokenOffset() };
  }
}

function apply(text: string, edits: Edit[]): string {
  const sorted = [...edits].sort((a, b) => b.offset - a.offset);
  for (const e of sorted) text = text.slice(0, e.offset) + e.text + text.slice(e.offset + e.length);
  return text;
}

function render(value: unknown, indent: string, style: Style): string {
  return JSON.stringify(value, null, style.unit).split('\n').join(`${style.eol}${indent}`);
}

function lineIndent(text: string, offset: number): string {
  const lineStart = text.lastIndexOf('\n', offset - 1) + 1;
  return /^[ \t]*/.exec(text.slice(lineStart, offset))?.[0] ?? '';
}

function detectStyle(text: string): Style {
  const eol = text.includes('\r\n') ? '\r\n' : '\n';
  const m = /\n([ \t]+)["}/]/.exec(text);
  let unit = '  ';
  if (m?.[1] !== undefined)
    unit = m[1].startsWith('\t') ? '\t' : m[1].length >= 2 && m[1].length <= 8 ? m[1] : '  ';
  return { unit, eol };
}
