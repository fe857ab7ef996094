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

/**
 * A logger whose lines can be made and written apart, for a caller that makes its lines when it
 * has them and writes them later, in batches (the audit writer without a `logFile`): the
 * runner's line logger and its children. Any other logger is called one entry at a time.
 */
export interface LineLogger extends Logger {
  readonly lines: LineOutput;
}

/** The `lines` of a logger that has them (`LineLogger`), else undefined. */
export function linesOf(logger: Logger): LineOutput | undefined {
  const lines = (logger as Partial<LineLogger>).lines;
  return typeof lines === 'object' ? lines : undefined;
}

/** A logger's lines, made and written apart (`LineLogger.lines`). */
export interface LineOutput {
  /** The line `info(obj, msg)` would write now, newline included; undefined when info is off. */
  info(obj: object, msg: string): string | undefined;
  /**
   * The same line for an entry the caller has serialized itself, as JSON object members
   * without the braces (`"a":1,"b":{...}`): members that `mayRedact` passes and that do not
   * repeat the line's own keys (`level`, `time`, `msg`, the bindings).
   */
  infoMembers(members: string, msg: string): string | undefined;
  /** Appends whole lines that `info` made, as bytes. */
  write(chunk: Uint8Array): void;
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

/** A member named like a redacted key, in any case, in JSON text (`"Token":`). */
const REDACTABLE_MEMBER = new RegExp(`"(?:${[...REDACTED_KEYS].join('|')})":`, 'i');

/**
 * Whether JSON text may hold a member this module's loggers redact. False means none is there
 * (a string value that merely contains such a name, escaped, may still say true).
 */
export function mayRedact(json: string): boolean {
  return REDACTABLE_MEMBER.test(json);
}

const noop: LogFn = () => {};

export interface LineLoggerOptions {
  /** trace, debug, info (default), warn, error, fatal or silent. */
  level?: string;
  name?: string;
  /** Receives each line, newline included. */
  write: (line: string) => void;
  /**
   * Receives bytes holding whole lines (`LineLogger.lines.write`: a batch of them at once); without
   * it they go to `write` as text, a line at a time.
   */
  writeBytes?: (chunk: Uint8Array) => void;
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
export function createLineLogger(options: LineLoggerOptions): LineLogger {
  const now = options.now ?? Date.now;
  const base: Record<string, unknown> = { pid: process.pid };
  if (options.name !== undefined) base['name'] = options.name;
  const write = options.write;
  // Without `writeBytes`, `write` still gets one line a call.
  const writeBytes =
    options.writeBytes ??
    ((chunk: Uint8Array) => {
      const text = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString('utf8');
      for (const line of text.split('\n')) if (line !== '') write(`${line}\n`);
    });
  return makeLineLogger(options.level ?? 'info', base, write, writeBytes, now);
}

function makeLineLogger(
  level: string,
  bindings: Record<string, unknown>,
  write: (line: string) => void,
  writeBytes: (chunk: Uint8Array) => void,
  now: () => number,
): LineLogger {
  const threshold = LOG_LEVELS[level] ?? LOG_LEVELS['info']!;
  const lineOf = (name: string, objOrMsg: object | string, msg?: string): string => {
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
    return `${line}\n`;
  };
  // The bindings (`pid` at least) as members after a comma, for lines whose entry comes
  // serialized (`infoMembers`); made on first use, so a logger that never makes one never does.
  let bound: string | undefined;
  const boundMembers = (): string => (bound ??= `,${JSON.stringify(bindings, replacer).slice(1, -1)}`);
  const on = (name: string): boolean => (LOG_LEVELS[name] ?? 0) >= threshold;
  const at = (name: string): LogFn =>
    on(name) ? (objOrMsg: object | string, msg?: string) => write(lineOf(name, objOrMsg, msg)) : noop;
  const infoOn = on('info');
  return {
    level,
    trace: at('trace'),
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    fatal: at('fatal'),
    silent: noop,
    child: (more) => makeLineLogger(level, { ...bindings, ...more }, write, writeBytes, now),
    lines: {
      info: (obj, msg) => (infoOn ? lineOf('info', obj, msg) : undefined),
      infoMembers: (members, msg) =>
        infoOn
          ? `{"level":${LOG_LEVELS['info']},"time":${now()}${boundMembers()}` +
            `${members === '' ? '' : `,${members}`},"msg":${JSON.stringify(msg)}}\n`
          : undefined,
      write: writeBytes,
    },
  };
}

/** A logger that drops everything; for tests and library defaults. */
export const silentLogger: Logger = createLineLogger({ level: 'silent', write: () => {} });
