/**
 * A log as a person reads it, one implementation for every surface that shows one: `skep serve`
 * and `skep logs` on a terminal, the web UI in a browser. pino's JSON lines (the service logger's
 * and the runner's line logger's) become `12:04:05 INFO  runner: proxy listening port=4100`; a
 * line repeated back to back is shown once, followed by `  … ×N` (N: how many times it was
 * written, its time and pid aside); a note that is the same for every workload start ("no
 * container engine answered") is shown once. Lines that are not JSON (a server's own stderr)
 * reach the surface as they are. What only one surface needs stays with it: a terminal's colours
 * and control-character escaping (`../log-format.ts`, `../terminal-text.ts`), the page's <pre>.
 * The web UI's bundle imports this folder, so nothing here may load a Node.js module.
 */
import { isRecord } from '../is-record.js';

/** One log line's JSON object, in pino's format (`level`, `time`, `pid`, `name`, `msg`, fields). */
export type LogEntry = Readonly<Record<string, unknown>>;

const LEVEL_NAMES: Readonly<Record<number, string>> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO',
  40: 'WARN',
  50: 'ERROR',
  60: 'FATAL',
};
/** pino's level for a line that names none: what pino's own pretty-printer assumes. */
const DEFAULT_LEVEL = 30;
/** pino's own fields: shown in the line's fixed parts, or not at all. */
const FIXED = new Set(['level', 'time', 'pid', 'hostname', 'name', 'msg', 'v']);
/** Runner notes worth reading once per log, however many starts wrote them. */
const ONCE = new Set(['no container engine answered']);

/** The JSON object a log line holds, or undefined for any other line. */
export function parseLogLine(line: string): LogEntry | undefined {
  // Only a line that opens an object can be one: a server's plain stderr is not parsed at all.
  if (!line.startsWith('{')) return undefined;
  try {
    const parsed = JSON.parse(line) as unknown;
    return isRecord(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** Where the surfaces differ: a terminal shows both, the page neither. */
export interface LogLineOptions {
  /** `12:04:05.123` rather than `12:04:05`. */
  milliseconds: boolean;
  /**
   * An `err` object below the line (`Type: message`, its stack at ERROR and above), indented;
   * otherwise its message inline, as `err="message"`, among the other fields.
   */
  errorLines: boolean;
}

/** One JSON line, in parts: a terminal colours the level and escapes the text; the page does not. */
export interface LogLineParts {
  /** Local time, or dashes for a line without one. */
  clock: string;
  /** pino's level number (INFO, 30, for a line without one). */
  level: number;
  /** The level's name padded to five columns; `L35` for a level pino does not name. */
  levelName: string;
  /** `name: message key=value …`, and the error's lines when `errorLines` asks for them. */
  text: string;
}

function pad(n: number, width = 2): string {
  return String(n).padStart(width, '0');
}

function clock(time: unknown, milliseconds: boolean): string {
  if (typeof time !== 'number') return milliseconds ? '--:--:--.---' : '--:--:--';
  const d = new Date(time);
  const seconds = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  return milliseconds ? `${seconds}.${pad(d.getMilliseconds(), 3)}` : seconds;
}

/**
 * A field as `key=value`: strings bare unless they hold spaces, quotes or `=`; a request (pino's
 * `req`, `res` serializers) as `req=GET /path` and `res=200`; an error inline by its message.
 */
function field(key: string, value: unknown): string {
  if (key === 'req' && isRecord(value)) {
    const { method, url } = value;
    if (typeof method === 'string' && typeof url === 'string') return `req=${method} ${url}`;
  }
  if (key === 'res' && isRecord(value) && typeof value['statusCode'] === 'number')
    return `res=${value['statusCode']}`;
  if (key === 'err' && isRecord(value) && typeof value['message'] === 'string')
    return `err=${JSON.stringify(value['message'])}`;
  if (typeof value === 'string')
    return `${key}=${/[\s"=]/.test(value) || value === '' ? JSON.stringify(value) : value}`;
  return `${key}=${JSON.stringify(value)}`;
}

/** An error (pino's `err` serializer) as lines below its log line. */
function errorLines(err: Record<string, unknown>, level: number): string {
  const { type, message, stack } = err;
  const head = `${typeof type === 'string' ? type : 'Error'}: ${typeof message === 'string' ? message : ''}`;
  const shown = typeof stack === 'string' && level >= 50 ? stack : head;
  return `\n    ${shown.split('\n').join('\n    ')}`;
}

/** One JSON log line as a person reads it, in the parts a surface finishes. */
export function logLineParts(entry: LogEntry, options: LogLineOptions): LogLineParts {
  const level = typeof entry['level'] === 'number' ? entry['level'] : DEFAULT_LEVEL;
  const err = options.errorLines && isRecord(entry['err']) ? entry['err'] : undefined;
  const name = typeof entry['name'] === 'string' ? `${entry['name']}: ` : '';
  const msg = typeof entry['msg'] === 'string' ? entry['msg'] : '';
  const fields = Object.entries(entry)
    .filter(([key, value]) => !FIXED.has(key) && value !== undefined && !(key === 'err' && err !== undefined))
    .map(([key, value]) => field(key, value));
  const text = `${name}${msg}${fields.length > 0 ? ` ${fields.join(' ')}` : ''}`;
  return {
    clock: clock(entry['time'], options.milliseconds),
    level,
    levelName: (LEVEL_NAMES[level] ?? `L${level}`).padEnd(5),
    text: err === undefined ? text : text + errorLines(err, level),
  };
}

/** What makes two lines "the same": all but the time and the process id. */
function sameness(line: string, entry: LogEntry | undefined): string {
  if (entry === undefined) return line;
  const { time: _time, pid: _pid, ...rest } = entry;
  return JSON.stringify(rest);
}

/**
 * A log read a line at a time, so a followed log can be fed as it grows: each line comes back
 * rendered by the surface's `render`, preceded by the count of the run of repeats it ends, or
 * not at all (a repeat, a note already said). Splitting text into lines is the caller's: a
 * terminal holds a line cut by a read until its end comes.
 */
export class ReadableLog {
  readonly #render: (line: string, entry: LogEntry | undefined) => string;
  #lastKey: string | undefined;
  #repeats = 0;
  readonly #said = new Set<string>();

  /** `render` shows one line: `entry` is its JSON object, or undefined for a line of plain text. */
  constructor(render: (line: string, entry: LogEntry | undefined) => string) {
    this.#render = render;
  }

  /** What to show for one line (without its line end): none, one or two lines. */
  line(line: string): string[] {
    const entry = parseLogLine(line);
    const key = sameness(line, entry);
    if (key === this.#lastKey) {
      this.#repeats++;
      return [];
    }
    const shown = this.end();
    this.#lastKey = key;
    const msg = entry?.['msg'];
    if (typeof msg === 'string' && ONCE.has(msg)) {
      if (this.#said.has(msg)) return shown;
      this.#said.add(msg);
    }
    shown.push(this.#render(line, entry));
    return shown;
  }

  /** The count of a run of repeats still open (`  … ×N`), if any: what the end of the text shows. */
  end(): string[] {
    const n = this.#repeats;
    this.#repeats = 0;
    return n > 0 ? [`  … ×${n + 1}`] : [];
  }
}
