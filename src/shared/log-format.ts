/**
 * Log lines for a person at a terminal. The service logger writes pino's JSON lines (for log
 * collectors and files); on a TTY each line is re-written as
 * `12:04:05.123 INFO  skep: skep serve is listening url=http://127.0.0.1:8080`, the level in
 * colour unless NO_COLOR is set, an error's message (and, at error level, its stack) below.
 * Small on purpose: pino-pretty would add a dozen packages for this. A message or field may
 * quote a server or a request, so all but the level's colour passes `terminalSafe`.
 */
import { type LogEntry, logLineParts, parseLogLine } from './readable-log/index.js';
import { terminalSafe } from './terminal-text.js';

const LEVEL_COLOURS: Readonly<Record<number, string>> = {
  10: '90',
  20: '90',
  30: '32',
  40: '33',
  50: '31',
  60: '35',
};

/**
 * One JSON log line (pino's format) as text for a terminal, newline included. A line that is
 * not JSON is returned as it is, but for its control characters.
 */
export function formatLogLine(line: string, options: { colour: boolean }): string {
  const entry = parseLogLine(line);
  return entry === undefined ? terminalSafe(line) : `${formatLogEntry(entry, options)}\n`;
}

/** One parsed log line for a terminal, without its line end (`readable-log/` has the rest). */
export function formatLogEntry(entry: LogEntry, options: { colour: boolean }): string {
  const parts = logLineParts(entry, { milliseconds: true, errorLines: true });
  const level = options.colour
    ? `\x1b[${LEVEL_COLOURS[parts.level] ?? '0'}m${parts.levelName}\x1b[0m`
    : parts.levelName;
  return `${parts.clock} ${level} ${terminalSafe(parts.text)}`;
}

/** Human-readable lines on a terminal, unless `SKEP_LOG_FORMAT` says `json` (or `pretty` forces them). */
export function wantsPrettyLogs(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): boolean {
  const format = env['SKEP_LOG_FORMAT'];
  if (format === 'json') return false;
  if (format === 'pretty') return true;
  return stream.isTTY === true;
}
