/**
 * A log as a person reads it, in the browser: the runner's JSON lines (pino's format) become
 * `12:04:05 INFO  proxy listening port=4100`, like `skep logs` and `skep serve` on a terminal;
 * a line repeated back to back is shown once, followed by `  … ×N` (N: how many times it was
 * written, its time aside); "no container engine answered" is shown once. Other lines (a server's own stderr) pass as they are. Text only:
 * the page shows it in a <pre>, so nothing in it is markup.
 */

const LEVELS: Readonly<Record<number, string>> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO',
  40: 'WARN',
  50: 'ERROR',
  60: 'FATAL',
};
/** Runner notes worth reading once per log, however many starts wrote them (as `skep logs`). */
const ONCE = new Set(['no container engine answered']);
/** pino's own fields: shown in the line's fixed parts, or not at all. */
const FIXED = new Set(['level', 'time', 'pid', 'hostname', 'name', 'msg', 'v']);

function clock(time: unknown): string {
  if (typeof time !== 'number') return '--:--:--';
  const d = new Date(time);
  return [d.getHours(), d.getMinutes(), d.getSeconds()].map((n) => String(n).padStart(2, '0')).join(':');
}

function field(key: string, value: unknown): string {
  if (key === 'err' && value !== null && typeof value === 'object') {
    const message = (value as { message?: unknown }).message;
    if (typeof message === 'string') return `err=${JSON.stringify(message)}`;
  }
  if (typeof value === 'string')
    return `${key}=${/[\s"=]/.test(value) || value === '' ? JSON.stringify(value) : value}`;
  return `${key}=${JSON.stringify(value)}`;
}

/** One line: its rendering, and what makes it "the same" as another (all but time and pid). */
function render(line: string): { text: string; key: string; msg?: string } {
  if (!line.startsWith('{')) return { text: line, key: line };
  let entry: unknown;
  try {
    entry = JSON.parse(line);
  } catch {
    return { text: line, key: line };
  }
  if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) return { text: line, key: line };
  const e = entry as Record<string, unknown>;
  const { time, pid: _pid, ...rest } = e;
  const level = typeof e['level'] === 'number' ? (LEVELS[e['level']] ?? `L${e['level']}`) : 'INFO';
  const name = typeof e['name'] === 'string' ? `${e['name']}: ` : '';
  const msg = typeof e['msg'] === 'string' ? e['msg'] : '';
  const fields = Object.entries(e)
    .filter(([key, value]) => !FIXED.has(key) && value !== undefined)
    .map(([key, value]) => field(key, value));
  return {
    msg,
    text: `${clock(time)} ${level.padEnd(5)} ${name}${msg}${fields.length > 0 ? ` ${fields.join(' ')}` : ''}`,
    key: JSON.stringify(rest),
  };
}

/** The whole log, rendered line by line with back-to-back repeats collapsed. */
export function readableLog(text: string): string {
  const out: string[] = [];
  let lastKey: string | undefined;
  let repeats = 0;
  const said = new Set<string>();
  const close = () => {
    if (repeats > 0) out.push(`  … ×${repeats + 1}`);
    repeats = 0;
  };
  for (const raw of text.split('\n')) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line === '') continue;
    const { text: shown, key, msg } = render(line);
    if (key === lastKey) {
      repeats++;
      continue;
    }
    close();
    lastKey = key;
    if (msg !== undefined && ONCE.has(msg)) {
      if (said.has(msg)) continue;
      said.add(msg);
    }
    out.push(shown);
  }
  close();
  return out.join('\n');
}
