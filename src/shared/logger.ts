/**
 * The process logger (pino). Secrets never reach it: callers log references and names,
 * and the redact list below is a second line of defence for well-known header fields.
 */
import { type Logger, pino } from 'pino';

export type { Logger };

export function createLogger(
  options: { level?: string; name?: string; destination?: number | string } = {},
): Logger {
  const level = options.level ?? process.env['SKEP_LOG_LEVEL'] ?? 'info';
  return pino(
    {
      level,
      ...(options.name === undefined ? {} : { name: options.name }),
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

/** A logger that drops everything; for tests and library defaults. */
export const silentLogger: Logger = pino({ level: 'silent' });
