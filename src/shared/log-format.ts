/**
 * Log lines for a person at a terminal. The service logger writes pino's JSON lines (for log
 * collectors and files); on a TTY each line is re-written as
 * `12:04:05.123 INFO  skep: skep serve is listening url=http://127.0.0.1:8080`, the level in
 * colour unless NO_COLOR is set, an error's message (and, at error level, its stack) below.
 * Small on purpose: pino-pretty would add a dozen packages for this. A message or field may
 * quote a server or a request, so all but the level's colour passes `terminalSafe`.
 */
import { terminalSafe } from './terminal-text.js';

const LEVEL_NAMES: Readonly<Record<number, string>> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO',
  40: 'WARN',
  50: 'ERROR',
  60: 'FATAL',
};
const LEVEL_COLOURS: Readonly<Record<number, string>> = {
  10: '90',
  20: '90',
  30: '32',
  40: '33',
  50: '31',
  60: '35',
};
/** pino's own fields, shown in the line's fixed parts or not at all. */
const FIXED = new Set(['level', 'time', 'pid', 'hostname', 'name', 'msg', 'err', 'v']);

function pad2(n: number, width = 2): string {
  return String(n).padStart(width, '0');
}

function clock(time: unknown): string {
  if (typeof time !== 'number') return '--:--:--.---';
  const d = new Date(time);
  return `${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}.${pad2(d.getMilliseconds(), 3)}`;
}

/** A field's value as `key=value`: strings bare unless they hold spaces, requests as `GET /path`. */
function field(key: string, value: unknown): string {
  if (key === 'req' && value !== null && typeof value === 'object') {
    const req = value as { method?: unknown; url?: unknown };
    if (typeof req.method === 'string' && typeof req.url === 'string') return `req=${req.method} ${req.url}`;
  }
  if (key === 'res' && value !== null && typeof value === 'object') {
    const status = (value as { statusCode?: unknown }).statusCode;
    if (typeof status === 'number') return `res=${status}`;
  }
  if (typeof value === 'string')
    return `${key}=${/[\s"=]/.test(value) || value === '' ? JSON.stringify(value) : value}`;
  return `${key}=${JSON.stringify(value)}`;
}

/**
 * One JSON log line (pino's format) as text for a terminal, newline included. A line that is
 * not JSON is returned as it is, but for its control characters.
 */
export function formatLogLine(line: string, options: { colour: boolean }): string {
  let entry: Record<string, unknown>;
  try {
    const parsed = JSON.parse(line) as unknown;
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return terminalSafe(line);
    entry = parsed as Record<string, unknown>;
  } catch {
    return terminalSafe(line);
  }
  const level = typeof entry['level'] === 'number' ? entry['level'] : 30;
  const levelName = (LEVEL_NAMES[level] ?? `L${level}`).padEnd(5);
  const levelText = options.colour ? `\x1b[${LEVEL_COLOURS[level] ?? '0'}m${levelName}\x1b[0m` : levelName;
  const name = typeof entry['name'] === 'string' ? `${entry['name']}: ` : '';
  const msg = typeof entry['msg'] === 'string' ? entry['msg'] : '';
  const fields = Object.entries(entry)
    .filter(([key, value]) => !FIXED.has(key) && value !== undefined)
    .map(([key, value]) => field(key, value));
  let text = `${name}${msg}${fields.length > 0 ? ` ${fields.join(' ')}` : ''}`;
  const err = entry['err'] as { type?: unknown; message?: unknown; stack?: unknown } | undefined;
  if (err !== null && typeof err === 'object') {
    const stack = typeof err.stack === 'string' && level >= 50 ? err.stack : undefined;
    const head = `${typeof err.type === 'string' ? err.type : 'Error'}: ${typeof err.message === 'string' ? err.message : ''}`;
    text += `\n    ${(stack ?? head).split('\n').join('\n    ')}`;
  }
  return `${clock(entry['time'])} ${levelText} ${terminalSafe(text)}\n`;
}

/** Human-readable lines on a terminal, unless `SKEP_LOG_FORMAT` says `json` (or `pretty` forces them). */
export function wantsPrettyLogs(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): boolean {
  const format = env['SKEP_LOG_FORMAT'];
  if (format === 'json') return false;
  if (format === 'pretty') return true;
  return stream.isTTY === true;
}
