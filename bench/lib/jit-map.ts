/**
 * The names of a Node process's JIT code, from the map V8 writes with `--perf-basic-prof`
 * (`/tmp/perf-<pid>.map`: one `start size name` line per code object, addresses in hex).
 *
 * V8 only appends to that file. When a code object is freed (a function deoptimized, or its
 * bytecode flushed, and with `--interpreted-frames-native-stack` each interpreted function has a
 * trampoline of its own) and new code is put where it was, the file names both for the same
 * addresses, and perf picks either. The later line is the one that names the code that runs
 * there now, so here a line replaces every earlier one whose range it overlaps. perf also leaves
 * samples in code pages committed after it attached unnamed (`[unknown]`: it saw no mapping for
 * them); looking their address up here names them.
 */
export class JitMap {
  /** Live entries, sorted by start, none overlapping another. */
  readonly #starts: number[] = [];
  readonly #ends: number[] = [];
  readonly #names: string[] = [];

  /** Reads a map's text; a line that does not parse is skipped. */
  static parse(text: string): JitMap {
    const map = new JitMap();
    for (const line of text.split('\n')) {
      const m = /^([0-9a-f]+) ([0-9a-f]+) (.*)$/i.exec(line);
      if (m === null) continue;
      const start = Number.parseInt(m[1]!, 16);
      const size = Number.parseInt(m[2]!, 16);
      if (size > 0) map.#add(start, start + size, m[3]!);
    }
    return map;
  }

  get size(): number {
    return this.#starts.length;
  }

  /** The name of the code holding `address`, or undefined when none does. */
  lookup(address: number): string | undefined {
    const i = this.#lastStartingAtOrBefore(address);
    return i >= 0 && address < this.#ends[i]! ? this.#names[i] : undefined;
  }

  /** Index of the last entry whose start is ≤ `address`, or −1. */
  #lastStartingAtOrBefore(address: number): number {
    let lo = 0;
    let hi = this.#starts.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#starts[mid]! <= address) lo = mid + 1;
      else hi = mid;
    }
    return lo - 1;
  }

  /** Adds a range, removing the entries it overlaps (they name code that was freed). */
  #add(start: number, end: number, name: string): void {
    // The first entry that may overlap: the one starting at or before `start`, if it reaches past it.
    let first = this.#lastStartingAtOrBefore(start);
    if (first < 0 || this.#ends[first]! <= start) first++;
    let last = first;
    while (last < this.#starts.length && this.#starts[last]! < end) last++;
    this.#starts.splice(first, last - first, start);
    this.#ends.splice(first, last - first, end);
    this.#names.splice(first, last - first, name);
  }
}
