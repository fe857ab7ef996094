/** CLI output helpers: aligned tables for people, JSON for scripts (`--json`). */

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export function printTable(headers: string[], rows: (string | number | boolean | undefined)[][]): void {
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
