/**
 * The service logger: pino, asynchronous, to stderr by default. `skep serve` hands it to
 * Fastify. The redact list mirrors `REDACTED_KEYS` of the line logger.
 */
import { pino } from 'pino';
import { definedOnly } from './defined-only.js';
import type { Logger } from './logger.js';

export function createLogger(
  options: { level?: string; name?: string; destination?: number | string } = {},
): Logger & { flush(cb?: (err?: Error) => void): void } {
  const level = options.level ?? process.env['SKEP_LOG_LEVEL'] ?? 'info';
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
    pino.destination({ dest: options.destination ?? 2, sync: false }),
  );
}
