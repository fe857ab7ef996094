/**
 * Values keyed by increasing integer ids (a proxy's requests in flight), stored in a ring of
 * slots instead of a `Map`, for hot paths where keys are added and removed on every call.
 *
 * Why not a `Map` (or a `Set`): V8 keeps their entries in a hash table that it replaces as
 * entries come and go, and a replaced table keeps a reference to the one that replaced it
 * (live iterators follow it) and to the values it held. Once a full GC has moved the table in
 * use into the old generation (a full GC moves everything live there), every later table, and
 * every value ever put in one, is reachable from a dead old object until the next full GC.
 * Young-generation collections then keep and promote all of it, and the old generation fills
 * with it. In a proxy runner keeping its calls in flight in a `Map`, every request's objects
 * (its request, response and headers) were promoted after the first full GC: about 4.6 KB per
 * call instead of 0.2 KB, and a full GC every ~150 ms under load, for as long as it ran
 * (`docs/performance.md`, "Why a runner got slower after its first full GC").
 *
 * Ids are positive; 0, like any id not set, is never found. A slot is `id & mask`. An id whose
 * slot is held by another id (a call outlived the ring) doubles the ring, up to `MAX_SLOTS`;
 * beyond that the older entry moves to a `Map` kept for such stragglers. Iteration is in id
 * order, as a `Map`'s would be for increasing ids.
 */
const MIN_SLOTS = 16;
const MAX_SLOTS = 4096;

export class SeqTable<V> {
  #ids: number[] = new Array<number>(MIN_SLOTS).fill(0);
  #values: Array<V | undefined> = new Array<V | undefined>(MIN_SLOTS).fill(undefined);
  #mask = MIN_SLOTS - 1;
  #inRing = 0;
  /** Entries that lost their slot to a newer id while the ring was at its largest. */
  #stragglers: Map<number, V> | undefined;

  get size(): number {
    return this.#inRing + (this.#stragglers?.size ?? 0);
  }

  /** Adds `value` under `id`, a positive safe integer not in the table. */
  set(id: number, value: V): void {
    if (!Number.isSafeInteger(id) || id <= 0)
      throw new RangeError(`SeqTable ids are positive integers, got ${id}`);
    for (;;) {
      const slot = id & this.#mask;
      const held = this.#ids[slot]!;
      if (held === 0 || held === id) {
        if (held === 0) this.#inRing++;
        this.#ids[slot] = id;
        this.#values[slot] = value;
        return;
      }
      if (this.#mask + 1 < MAX_SLOTS) {
        this.#grow();
        continue;
      }
      // The ring is as large as it gets: the older entry waits elsewhere.
      (this.#stragglers ??= new Map()).set(held, this.#values[slot]!);
      this.#ids[slot] = id;
      this.#values[slot] = value;
      return;
    }
  }

  get(id: number): V | undefined {
    const slot = id & this.#mask;
    if (this.#ids[slot] === id && id > 0) return this.#values[slot];
    return this.#stragglers?.get(id);
  }

  has(id: number): boolean {
    return id > 0 && (this.#ids[id & this.#mask] === id || this.#stragglers?.has(id) === true);
  }

  /** Removes `id`; false when it was not in the table. */
  delete(id: number): boolean {
    const slot = id & this.#mask;
    if (this.#ids[slot] === id && id > 0) {
      this.#ids[slot] = 0;
      this.#values[slot] = undefined;
      this.#inRing--;
      return true;
    }
    const stragglers = this.#stragglers;
    if (stragglers === undefined || !stragglers.delete(id)) return false;
    if (stragglers.size === 0) this.#stragglers = undefined;
    return true;
  }

  clear(): void {
    this.#ids.fill(0);
    this.#values.fill(undefined);
    this.#inRing = 0;
    this.#stragglers = undefined;
  }

  /** The entries in id order, as a snapshot: the table may change while they are visited. */
  entries(): Array<[number, V]> {
    const out: Array<[number, V]> = [];
    for (let slot = 0; slot <= this.#mask; slot++) {
      const id = this.#ids[slot]!;
      if (id !== 0) out.push([id, this.#values[slot]!]);
    }
    if (this.#stragglers !== undefined) for (const entry of this.#stragglers) out.push(entry);
    return out.sort((a, b) => a[0] - b[0]);
  }

  [Symbol.iterator](): IterableIterator<[number, V]> {
    return this.entries()[Symbol.iterator]();
  }

  values(): V[] {
    return this.entries().map((entry) => entry[1]);
  }

  #grow(): void {
    const ids = this.#ids;
    const values = this.#values;
    const size = (this.#mask + 1) * 2;
    this.#ids = new Array<number>(size).fill(0);
    this.#values = new Array<V | undefined>(size).fill(undefined);
    this.#mask = size - 1;
    this.#inRing = 0;
    for (let slot = 0; slot < ids.length; slot++) {
      const id = ids[slot]!;
      if (id !== 0) this.set(id, values[slot]!);
    }
  }
}
