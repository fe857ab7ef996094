/**
 * "Did you mean …?" for a mistyped name: the candidates within a small edit distance (optimal
 * string alignment: insertions, deletions, substitutions and swaps of two neighbours), closest
 * first. A candidate `ns/short` also matches on its short name.
 */

/** Edit distance of `a` and `b`, or `limit + 1` once it is certainly above `limit`. */
export function editDistance(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let before = new Array<number>(b.length + 1).fill(0);
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = new Array<number>(b.length + 1).fill(0);
    current[0] = i;
    let rowMin = current[0];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d = Math.min(d, before[j - 2]! + 1);
      current[j] = d;
      rowMin = Math.min(rowMin, d);
    }
    if (rowMin > limit) return limit + 1;
    before = previous;
    previous = current;
  }
  return previous[b.length]!;
}

/** Up to `max` of `candidates` close to `name` (at most 2 edits, or a third of its length). */
export function nearestNames(name: string, candidates: Iterable<string>, max = 3): string[] {
  const typed = name.toLowerCase();
  const limit = Math.max(2, Math.floor(typed.length / 3));
  const scored: [string, number][] = [];
  for (const candidate of new Set(candidates)) {
    const full = candidate.toLowerCase();
    const short = full.slice(full.lastIndexOf('/') + 1);
    const d = Math.min(editDistance(typed, full, limit), editDistance(typed, short, limit));
    if (d <= limit && full !== typed) scored.push([candidate, d]);
  }
  scored.sort((x, y) => x[1] - y[1] || x[0].localeCompare(y[0]));
  return scored.slice(0, max).map(([c]) => c);
}

/** `; did you mean a, b or c?` or nothing. */
export function didYouMean(names: readonly string[]): string {
  if (names.length === 0) return '';
  const last = names[names.length - 1];
  return `; did you mean ${names.length === 1 ? last : `${names.slice(0, -1).join(', ')} or ${last}`}?`;
}
