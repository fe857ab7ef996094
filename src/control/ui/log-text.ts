/**
 * A log as a person reads it, in the browser: the runner's JSON lines (pino's format) become
 * `12:04:05 INFO  proxy listening port=4100`, like `skep logs` and `skep serve` on a terminal,
 * with repeats collapsed the same way (`shared/readable-log/`, the one implementation of both).
 * The page's part: the time to the second, an error by its message inline, blank lines left
 * out, and no escaping: the page shows the text in a <pre> as text content, so nothing in it is
 * markup.
 */
import { type LogEntry, logLineParts, ReadableLog } from '../../shared/readable-log/index.js';

function pageLine(line: string, entry: LogEntry | undefined): string {
  if (entry === undefined) return line;
  const { clock, levelName, text } = logLineParts(entry, { milliseconds: false, errorLines: false });
  return `${clock} ${levelName} ${text}`;
}

/** The whole log, rendered line by line with back-to-back repeats collapsed. */
export function readableLog(text: string): string {
  const log = new ReadableLog(pageLine);
  const out: string[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line !== '') out.push(...log.line(line));
  }
  out.push(...log.end());
  return out.join('\n');
}
