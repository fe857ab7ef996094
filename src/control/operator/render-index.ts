/**
 * The documents a render sees, indexed by kind/namespace/name: the resources being rendered and
 * what they reference (Secrets, ConfigMaps, shared configurations). Resources that failed
 * validation are kept apart with their problems, so that a workload referencing one says it is
 * invalid rather than missing.
 */
type Node = Record<string, unknown>;

export const keyOf = (kind: string, namespace: string, name: string) => `${kind}/${namespace}/${name}`;

export class Index {
  readonly byKey = new Map<string, Node>();
  /** kind/namespace/name → what is wrong with a resource that did not validate. */
  readonly invalid = new Map<string, string>();
  constructor(
    docs: Node[],
    readonly defaultNamespace: string,
  ) {
    for (const d of docs) {
      const meta = (d['metadata'] ?? {}) as Node;
      this.byKey.set(keyOf(String(d['kind']), this.ns(d), String(meta['name'])), d);
    }
  }
  ns(d: Node): string {
    const meta = (d['metadata'] ?? {}) as Node;
    return typeof meta['namespace'] === 'string' ? meta['namespace'] : this.defaultNamespace;
  }
  get(kind: string, namespace: string, name: string): Node | undefined {
    return this.byKey.get(keyOf(kind, namespace, name));
  }
  of(kind: string): Node[] {
    return [...this.byKey.values()].filter((d) => d['kind'] === kind);
  }
}

/** One key of a Secret or ConfigMap document (`stringData`/`data`; Secret `data` is base64). */
export function documentValue(doc: Node | undefined, key: string): Buffer | undefined {
  if (doc === undefined) return undefined;
  const data = doc['data'] as Record<string, string> | undefined;
  const plain = doc['stringData'] as Record<string, string> | undefined;
  if (plain?.[key] !== undefined) return Buffer.from(plain[key], 'utf8');
  if (data?.[key] !== undefined)
    return doc['kind'] === 'Secret' ? Buffer.from(data[key], 'base64') : Buffer.from(data[key], 'utf8');
  return undefined;
}

/** Reads a Secret key from the documents (for validation that needs the value's length). */
export function secretReader(index: Index) {
  return async (namespace: string, name: string, key: string): Promise<Buffer | undefined> =>
    documentValue(index.get('Secret', namespace, name), key);
}
