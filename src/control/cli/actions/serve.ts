/** `skep serve`: starts the management API and runs it until SIGINT/SIGTERM. */
import { API_TOKEN_ENV, loadConfig } from '../../../config/index.js';
import { createLogger, definedOnly } from '../../../shared/index.js';

export interface ServeFlags {
  host?: string;
  port?: number;
  socket?: string;
  allowRemote?: boolean;
  allowedOrigin: string[];
  tlsCert?: string;
  tlsKey?: string;
}

export async function serve(opts: ServeFlags): Promise<void> {
  const logger = createLogger({ name: 'skep' });
  const config = loadConfig();
  const { startServer } = await import('../../api/server.js');
  const server = await startServer(
    config,
    {
      ...definedOnly({ host: opts.host, port: opts.port, socket: opts.socket }),
      ...(opts.allowRemote === true ? { allowRemote: true } : {}),
      allowedOrigins: opts.allowedOrigin,
      ...definedOnly({ tlsCert: opts.tlsCert, tlsKey: opts.tlsKey }),
    },
    { logger, removeOrphanContainers: true },
  );
  // Where the token is, never the token itself.
  const token =
    server.apiToken === undefined
      ? {}
      : { api_token: server.apiToken.source === 'env' ? `$${API_TOKEN_ENV}` : server.apiToken.file };
  logger.info({ url: server.url, state: config.paths.stateDir, ...token }, 'skep serve is listening');
  // A login link (one use, 60 s) only for a person at a terminal: logs and pipes keep no credentials.
  const loginUrl = process.stdout.isTTY ? server.loginUrl() : undefined;
  if (loginUrl !== undefined)
    process.stdout.write(
      `\nOpen Skep in your browser: ${loginUrl}\n(the link works once, within 60 s; \`skep ui\` makes a new one)\n\n`,
    );
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      logger.info({ signal }, 'shutting down');
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      const force = setTimeout(() => process.exit(1), 30_000);
      force.unref();
      server.close().then(resolve, (err) => {
        logger.error({ err }, 'error during shutdown');
        resolve();
      });
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  logger.flush();
}
