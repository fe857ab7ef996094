/**
 * `skep logs` for a person: the runner's JSON lines (the proxy log, pino's format) become
 * `12:04:05.123 INFO  proxy listening port=…` as `skep serve` prints on a terminal; a line
 * repeated back to back is shown once, followed by `  … ×N` (N: how many times it was written,
 * its time aside); a note that is the same for every workload start ("no container engine
 * answered") is shown once. Lines that are not JSON (a server's own stderr) pass as they are,
 * but for their control characters. `--raw` bypasses all of this.
 */
import { formatLogLine, terminalSafe } from '../../shared/index.js';

/** Runner notes worth reading once per log, however many starts wrote them. */
const ONCE = new Set(['no container engine answered']);

/** What makes two lines "the same": the line without its time (and, for JSON, pid). */
function sameness(line: string): { key: string; msg: string | undefined } {
  if (!line.startsWith('{')) return { key: line, msg: undefined };
  try {
    const entry = JSON.parse(line) as unknown;
    if (entry === null || typeof entry !== 'object' || Array.isArray(entry))
      return { key: line, msg: undefined };
    const { time: _time, pid: _pid, ...rest } = entry as Record<string, unknown>;
    const msg = typeof rest['msg'] === 'string' ? rest['msg'] : undefined;
    return { key: JSON.stringify(rest), msg };
  } catch {
    return { key: line, msg: undefined };
  }
}

/**
 * Renders log text line by line; keeps what a line cut by a read needs (the part after the
 * last newline) and the current run of repeats, so text can be fed in pieces (`--follow`).
 */
export class LogView {
  readonly #colour: boolean;
  #partial = '';
  #lastKey: string | undefined;
  #repeats = 0;
  readonly #said = new Set<string>();

  constructor(options: { colour: boolean }) {
    this.#colour = options.colour;
  }

  /** The rendered text for `chunk` (whole lines only; a trailing partial line waits). */
  write(chunk: string): string {
    const text = this.#partial + chunk;
    const lines = text.split('\n');
    this.#partial = lines.pop() ?? '';
    let out = '';
    for (const raw of lines) out += this.#line(raw.endsWith('\r') ? raw.slice(0, -1) : raw);
    return out;
  }

  /** The end of the text: a partial last line, and the count of a run still open. */
  end(): string {
    const rest = this.#partial === '' ? '' : this.#line(this.#partial);
    this.#partial = '';
    return rest + this.#closeRun();
  }

  #closeRun(): string {
    const n = this.#repeats;
    this.#repeats = 0;
    return n > 0 ? `  … ×${n + 1}\n` : '';
  }

  #line(line: string): string {
    const { key, msg } = sameness(line);
    if (key === this.#lastKey) {
      this.#repeats++;
      return '';
    }
    const closed = this.#closeRun();
    this.#lastKey = key;
    if (msg !== undefined && ONCE.has(msg)) {
      if (this.#said.has(msg)) return closed;
      this.#said.add(msg);
    }
    const shown = line.startsWith('{')
      ? formatLogLine(line, { colour: this.#colour })
      : `${terminalSafe(line)}\n`;
    return closed + shown;
  }
}

/** Colour for a terminal that did not opt out (https://no-color.org). */
export function wantsColour(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): boolean {
  return stream.isTTY === true && (env['NO_COLOR'] ?? '') === '';
}
