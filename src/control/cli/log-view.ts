/**
 * `skep logs` for a person: the runner's JSON lines (the proxy log, pino's format) become
 * `12:04:05.123 INFO  proxy listening port=…` as `skep serve` prints on a terminal; a line
 * repeated back to back is shown once, followed by `  … ×N` (N: how many times it was written,
 * its time aside); a note that is the same for every workload start ("no container engine
 * answered") is shown once. Lines that are not JSON (a server's own stderr) pass as they are,
 * but for their control characters. `--raw` bypasses all of this. The reading is the web UI's
 * too (`shared/readable-log/`); the terminal's part is the colour, the escaping and `--follow`.
 */
import { formatLogEntry, terminalSafe } from '../../shared/index.js';
import { type LogEntry, ReadableLog } from '../../shared/readable-log/index.js';

/**
 * Renders log text line by line; keeps what a line cut by a read needs (the part after the
 * last newline), so text can be fed in pieces (`--follow`).
 */
export class LogView {
  readonly #log: ReadableLog;
  #partial = '';

  constructor(options: { colour: boolean }) {
    const { colour } = options;
    this.#log = new ReadableLog((line: string, entry: LogEntry | undefined) =>
      entry === undefined ? terminalSafe(line) : formatLogEntry(entry, { colour }),
    );
  }

  /** The rendered text for `chunk` (whole lines only; a trailing partial line waits). */
  write(chunk: string): string {
    const text = this.#partial + chunk;
    const lines = text.split('\n');
    this.#partial = lines.pop() ?? '';
    let out = '';
    for (const raw of lines) out += asText(this.#log.line(raw.endsWith('\r') ? raw.slice(0, -1) : raw));
    return out;
  }

  /** The end of the text: a partial last line, and the count of a run still open. */
  end(): string {
    const rest = this.#partial === '' ? '' : asText(this.#log.line(this.#partial));
    this.#partial = '';
    return rest + asText(this.#log.end());
  }
}

function asText(lines: string[]): string {
  return lines.map((line) => `${line}\n`).join('');
}

/** Colour for a terminal that did not opt out (https://no-color.org). */
export function wantsColour(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): boolean {
  return stream.isTTY === true && (env['NO_COLOR'] ?? '') === '';
}
