/**
 * The service logger: pino, asynchronous, to stderr by default. `skep serve` hands it to
 * Fastify. The redact list mirrors `REDACTED_KEYS` of the line logger. On a terminal (or with
 * `SKEP_LOG_FORMAT=pretty`) stderr gets human-readable lines (`log-format.ts`), JSON otherwise.
 */
import { pino } from 'pino';
import { definedOnly } from './defined-only.js';
import { formatLogLine, wantsPrettyLogs } from './log-format.js';
import type { Logger } from './logger.js';

export function createLogger(
  options: { level?: string; name?: string; destination?: number | string } = {},
): Logger & { flush(cb?: (err?: Error) => void): void } {
  const level = options.level ?? process.env['SKEP_LOG_LEVEL'] ?? 'info';
  const toStderr = options.destination === undefined || options.destination === 2;
  const colour = process.stderr.isTTY === true && (process.env['NO_COLOR'] ?? '') === '';
  const destination =
    toStderr && wantsPrettyLogs(process.stderr)
      ? { write: (line: string) => void process.stderr.write(formatLogLine(line, { colour })) }
      : pino.destination({ dest: options.destination ?? 2, sync: false });
  return pino(
    {
      level,
      ...definedOnly({ name: options.name }),
      redact: {
        paths: [
          'req.headers.authorization',
          'req.headers.cookie',
          '*.password',
          '*.secret',
          '*.token',
          '*.client_secret',
        ],
        censor: '[redacted]',
      },
    },
    destination,
  );
}
