/**
 * CLI output helpers: aligned tables for people, JSON for scripts (`--json`). What they print
 * may come from a server or a registry, so text passes `terminalSafe` and JSON has its C1
 * controls escaped: a cell or a value never moves the cursor or writes the clipboard.
 */
import { terminalSafe } from '../../shared/index.js';

/** The `--json` flag of a command that prints something. */
export interface JsonOpt {
  json?: boolean;
}

/** One table cell; `undefined` prints as empty. */
export type Cell = string | number | boolean | undefined;

/**
 * JSON.stringify escapes C0 controls (RFC 8259 §7) but leaves DEL and the C1 range raw;
 * `\u00XX` for those keeps the same JSON value and keeps a terminal from acting on them.
 */
const RAW_IN_JSON = /[\x7f-\x9f]/g;

export function printJson(value: unknown): void {
  const text = JSON.stringify(value, null, 2).replace(
    RAW_IN_JSON,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
  process.stdout.write(`${text}\n`);
}

export function printTable(headers: string[], rows: Cell[][]): void {
  // One line per row: a line break inside a cell could pose as a row of its own.
  const cells = rows.map((r) =>
    r.map((c) => (c === undefined ? '' : terminalSafe(String(c).replace(/\r?\n|\t/g, ' ')))),
  );
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
  else process.stdout.write(`${terminalSafe(line)}\n`);
}
