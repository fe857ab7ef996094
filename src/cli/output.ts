/** CLI output helpers: aligned tables for people, JSON for scripts (`--json`). */

/** The `--json` flag of a command that prints something. */
export interface JsonOpt {
  json?: boolean;
}

/** One table cell; `undefined` prints as empty. */
export type Cell = string | number | boolean | undefined;

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export function printTable(headers: string[], rows: Cell[][]): void {
  const cells = rows.map((r) => r.map((c) => (c === undefined ? '' : String(c))));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => r[i]?.length ?? 0)));
  const line = (r: string[]) =>
    r
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  process.stdout.write(`${line(headers)}\n`);
  for (const r of cells) process.stdout.write(`${line(r)}\n`);
}

/** A listing: `json` with `--json`, otherwise a table of `rows` under `headers`. */
export function printListing(opts: JsonOpt, json: unknown, headers: string[], rows: Cell[][]): void {
  if (opts.json === true) printJson(json);
  else printTable(headers, rows);
}

/** The outcome of an action: `json` with `--json`, otherwise one line of text. */
export function printOutcome(opts: JsonOpt, json: unknown, line: string): void {
  if (opts.json === true) printJson(json);
  else process.stdout.write(`${line}\n`);
}
