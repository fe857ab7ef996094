/**
 * Logging. `Logger` is the small structural interface the code logs through; pino's logger
 * (`createLogger`, used by `skep serve` and the operator, where Fastify wants pino) satisfies
 * it, and so does `createLineLogger`, a dependency-free JSON-lines logger in pino's line
 * format for the workload runner, which must stay small (one runs per workload).
 *
 * Secrets never reach a logger: callers log references and names. Both loggers also censor
 * well-known secret fields (`password`, `secret`, `token`, `client_secret`, and the
 * `authorization` and `cookie` headers) as a second line of defence.
 */

export interface LogFn {
  (obj: object, msg?: string): void;
  (msg: string): void;
}

export interface Logger {
  level: string;
  trace: LogFn;
  debug: LogFn;
  info: LogFn;
  warn: LogFn;
  error: LogFn;
  fatal: LogFn;
  silent: LogFn;
  child(bindings: Record<string, unknown>): Logger;
}

/** pino's numeric levels, so both loggers write the same lines. */
export const LOG_LEVELS: Readonly<Record<string, number>> = Object.freeze({
  trace: 10,
  debug: 20,
  info: 30,
  warn: 40,
  error: 50,
  fatal: 60,
  silent: Number.POSITIVE_INFINITY,
});

/** Field names whose values never reach a log line. */
export const REDACTED_KEYS: ReadonlySet<string> = new Set([
  'password',
  'secret',
  'token',
  'client_secret',
  'authorization',
  'cookie',
]);

const CENSOR = '[redacted]';
const noop: LogFn = () => {};

export interface LineLoggerOptions {
  /** trace, debug, info (default), warn, error, fatal or silent. */
  level?: string;
  name?: string;
  /** Receives each line, newline included. */
  write: (line: string) => void;
  now?: () => number;
}

function serializeError(err: Error): Record<string, unknown> {
  const out: Record<string, unknown> = { type: err.name, message: err.message };
  if (err.stack !== undefined) out['stack'] = err.stack;
  const code = (err as { code?: unknown }).code;
  if (code !== undefined) out['code'] = code;
  if (err.cause !== undefined)
    out['cause'] = err.cause instanceof Error ? serializeError(err.cause) : err.cause;
  return out;
}

function replacer(key: string, value: unknown): unknown {
  if (key !== '' && REDACTED_KEYS.has(key.toLowerCase()) && value !== undefined && value !== null)
    return CENSOR;
  if (value instanceof Error) return serializeError(value);
  if (typeof value === 'bigint') return value.toString();
  return value;
}

/** A JSON-lines logger in pino's format (`level`, `time`, `pid`, `name`, fields, `msg`). */
export function createLineLogger(options: LineLoggerOptions): Logger {
  const now = options.now ?? Date.now;
  const base: Record<string, unknown> = { pid: process.pid };
  if (options.name !== undefined) base['name'] = options.name;
  return makeLineLogger(options.level ?? 'info', base, options.write, now);
}

function makeLineLogger(
  level: string,
  bindings: Record<string, unknown>,
  write: (line: string) => void,
  now: () => number,
): Logger {
  const threshold = LOG_LEVELS[level] ?? LOG_LEVELS['info']!;
  const emitter =
    (name: string): LogFn =>
    (objOrMsg: object | string, msg?: string): void => {
      const entry: Record<string, unknown> = { level: LOG_LEVELS[name], time: now(), ...bindings };
      if (typeof objOrMsg === 'string') entry['msg'] = objOrMsg;
      else {
        Object.assign(entry, objOrMsg instanceof Error ? { err: objOrMsg } : objOrMsg);
        if (msg !== undefined) entry['msg'] = msg;
      }
      let line: string;
      try {
        line = JSON.stringify(entry, replacer);
      } catch {
        line = JSON.stringify({
          level: entry['level'],
          time: entry['time'],
          ...bindings,
          msg,
          unserializable: true,
        });
      }
      write(`${line}\n`);
    };
  const at = (name: string): LogFn => ((LOG_LEVELS[name] ?? 0) >= threshold ? emitter(name) : noop);
  return {
    level,
    trace: at('trace'),
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    fatal: at('fatal'),
    silent: noop,
    child: (more) => makeLineLogger(level, { ...bindings, ...more }, write, now),
  };
}

/** A logger that drops everything; for tests and library defaults. */
export const silentLogger: Logger = createLineLogger({ level: 'silent', write: () => {} });
