/**
 * Edits of YAML client configs (goose: a mapping of extensions; continue: a list of servers
 * identified by `name`) through the `yaml` Document API, which keeps comments, key order and
 * scalar styles. When nothing changes the text is returned untouched; when something does, the
 * document is printed again, so indentation may be normalized (2 spaces) but no content or
 * comment is lost.
 */
import { isDeepStrictEqual } from 'node:util';
import { type Document, isMap, isSeq, parseDocument, type YAMLMap, type YAMLSeq } from 'yaml';
import { SkepError } from '../shared/index.js';
import type { EntryChanges } from './edit-types.js';

export function editYaml(
  text: string,
  kind: 'yaml-map' | 'yaml-list',
  path: readonly string[],
  changes: EntryChanges,
  file: string,
): string {
  const doc = parse(text, file);
  const changed =
    kind === 'yaml-map' ? editMap(doc, path, changes, file) : editList(doc, path, changes, file);
  return changed ? doc.toString() : text;
}

export function readYamlEntries(
  text: string,
  kind: 'yaml-map' | 'yaml-list',
  path: readonly string[],
  file: string,
): Record<string, unknown> {
  const value = parse(text, file).getIn(path, false);
  if (value === undefined || value === null) return {};
  const plain = (value as { toJSON(): unknown }).toJSON();
  if (kind === 'yaml-map') return (plain ?? {}) as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const item of (plain ?? []) as Record<string, unknown>[]) {
    if (typeof item?.['name'] === 'string') out[item['name']] = item;
  }
  return out;
}

function parse(text: string, file: string): Document {
  const doc = parseDocument(text, { keepSourceTokens: false });
  const first = doc.errors[0];
  if (first !== undefined) {
    throw new SkepError(
      'client_config_invalid',
      `${file} is not valid YAML (${first.message.split('\n')[0]}); fix the file and retry`,
    );
  }
  if (doc.contents !== null && !isMap(doc.contents)) {
    throw new SkepError('client_config_invalid', `${file} does not hold a YAML mapping at the top level`);
  }
  return doc;
}

function container(
  doc: Document,
  path: readonly string[],
  file: string,
  check: (n: unknown) => boolean,
): unknown {
  const node = doc.getIn(path, true);
  if (node !== undefined && node !== null && !check(node)) {
    throw new SkepError('client_config_invalid', `${file}: "${path.join('.')}" has an unexpected type`);
  }
  return node;
}

function editMap(doc: Document, path: readonly string[], changes: EntryChanges, file: string): boolean {
  let map = container(doc, path, file, isMap) as YAMLMap | undefined | null;
  let changed = false;
  for (const name of changes.remove) {
    if (map?.has(name) === true && !changes.upsert.has(name)) {
      map.delete(name);
      changed = true;
    }
  }
  for (const [name, entry] of changes.upsert) {
    const current = map?.get(name, true) as { toJSON(): unknown } | undefined;
    if (current !== undefined && isDeepStrictEqual(current.toJSON(), entry)) continue;
    if (map === undefined || map === null) {
      doc.setIn(path, doc.createNode({}));
      map = doc.getIn(path, true) as YAMLMap;
    }
    map.set(name, doc.createNode(entry));
    changed = true;
  }
  return changed;
}

function editList(doc: Document, path: readonly string[], changes: EntryChanges, file: string): boolean {
  let seq = container(doc, path, file, isSeq) as YAMLSeq | undefined | null;
  const indexOf = (name: string): number =>
    seq?.items.findIndex((item) => isMap(item) && item.get('name') === name) ?? -1;
  let changed = false;
  for (const name of changes.remove) {
    if (changes.upsert.has(name)) continue;
    const i = indexOf(name);
    if (i >= 0) {
      seq!.items.splice(i, 1);
      changed = true;
    }
  }
  for (const [name, entry] of changes.upsert) {
    const i = indexOf(name);
    if (i >= 0) {
      const current = seq!.items[i] as { toJSON(): unknown };
      if (isDeepStrictEqual(current.toJSON(), entry)) continue;
      seq!.items[i] = doc.createNode(entry);
    } else {
      if (seq === undefined || seq === null) {
        doc.setIn(path, doc.createNode([]));
        seq = doc.getIn(path, true) as YAMLSeq;
      }
      seq.items.push(doc.createNode(entry));
    }
    changed = true;
  }
  return changed;
}
