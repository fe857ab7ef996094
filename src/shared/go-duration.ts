/**
 * Go durations (`time.ParseDuration`: `1h30m`, `500ms`, `1.5s`, `-2s`, `0`), the format of the
 * reference's configuration files. One parser, named after the unit it returns.
 */

/** Nanoseconds per unit of a Go duration. */
const UNIT_NS: Readonly<Record<string, number>> = {
  ns: 1,
  us: 1e3,
  µs: 1e3, // U+00B5 MICRO SIGN
  μs: 1e3, // U+03BC GREEK SMALL LETTER MU
  ms: 1e6,
  s: 1e9,
  m: 60e9,
  h: 3600e9,
};
const GO_DURATION = /^([+-]?)((?:(?:\d+\.?\d*|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+)$/;
const GO_TERM = /(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)/g;

/**
 * A Go duration in nanoseconds, as Go's `time.ParseDuration` reads it (an optional sign, then
 * decimal numbers each with a unit; `0` alone needs none); undefined when `text` is not one.
 */
export function goDurationNs(text: string): number | undefined {
  if (text === '0' || text === '+0' || text === '-0') return 0;
  const match = GO_DURATION.exec(text);
  if (match === null) return undefined;
  let total = 0;
  for (const term of match[2]!.matchAll(GO_TERM)) total += Number(term[1]) * UNIT_NS[term[2]!]!;
  return match[1] === '-' ? -total : total;
}

/** A Go duration in milliseconds (`goDurationNs` / 10⁶); undefined when `text` is not one. */
export function goDurationMs(text: string): number | undefined {
  const ns = goDurationNs(text);
  return ns === undefined ? undefined : ns / 1e6;
}
