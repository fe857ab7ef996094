/**
 * Reading fields of parsed JSON — Kubernetes objects as the API serves them, documents a render
 * reads — without type assertions: each reader checks the type of what it finds, so a field of
 * another type reads as absent.
 */
import { isRecord } from '../../shared/index.js';

type Node = Record<string, unknown>;

/** The value at `path` (object keys), or undefined where a step is not an object. */
export function at(value: unknown, ...path: string[]): unknown {
  let v = value;
  for (const key of path) {
    if (!isRecord(v)) return undefined;
    v = v[key];
  }
  return v;
}

/** The object at `path`, or an empty one. */
export function recordAt(value: unknown, ...path: string[]): Node {
  const v = at(value, ...path);
  return isRecord(v) ? v : {};
}

/** The list at `path`, or an empty one. */
export function listAt(value: unknown, ...path: string[]): unknown[] {
  const v = at(value, ...path);
  return Array.isArray(v) ? v : [];
}

/** The string at `path`, or undefined. */
export function stringAt(value: unknown, ...path: string[]): string | undefined {
  const v = at(value, ...path);
  return typeof v === 'string' ? v : undefined;
}

/** The string-valued entries of the object at `path` (labels, annotations, ConfigMap data). */
export function stringsAt(value: unknown, ...path: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(recordAt(value, ...path))) if (typeof v === 'string') out[k] = v;
  return out;
}
