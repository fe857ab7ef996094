/** Milliseconds per unit of a Go duration (`time.ParseDuration`). */
const UNIT_MS: Readonly<Record<string, number>> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/**
 * A Go-style duration (`1h30m`, `500ms`, `1.5s`: unsigned decimal numbers, each with a unit) in
 * milliseconds, or undefined when `text` is not one (empty, no unit, anything in between).
 */
export function parseGoDuration(text: string): number | undefined {
  const part = /([0-9]+(?:\.[0-9]+)?)(ns|us|µs|ms|s|m|h)/y;
  let total = 0;
  let matched = 0;
  for (let m = part.exec(text); m !== null; m = part.exec(text)) {
    total += Number(m[1]) * (UNIT_MS[m[2] as string] ?? 0);
    matched = part.lastIndex;
  }
  return text.length > 0 && matched === text.length ? total : undefined;
}
