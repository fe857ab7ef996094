/** `skep serve`: the management API. Accepts the reference CLI's serve flags. */
import type { Command } from 'commander';
import { startServer } from '../../api/server.js';
import { loadConfig } from '../../config/index.js';
import { createLogger } from '../../shared/index.js';

export function registerServe(program: Command): void {
  program
    .command('serve')
    .description('Run the management API (default 127.0.0.1:8080)')
    .option('--host <host>', 'bind address (default from config: 127.0.0.1)')
    .option('--port <port>', 'TCP port (default from config: 8080)', (v) => parsePort(v))
    .option('--socket <path>', 'listen on a unix socket instead of TCP (mode 0660, removed on exit)')
    .option(
      '--openapi',
      'accepted for compatibility; the OpenAPI document is always served at /api/openapi.json',
    )
    .allowUnknownOption(true)
    .action(async (opts: { host?: string; port?: number; socket?: string }, command: Command) => {
      const logger = createLogger({ name: 'skep' });
      if (command.args.length > 0)
        logger.warn({ ignored: command.args }, 'ignoring unsupported serve arguments');
      const config = loadConfig();
      const server = await startServer(
        config,
        {
          ...(opts.host === undefined ? {} : { host: opts.host }),
          ...(opts.port === undefined ? {} : { port: opts.port }),
          ...(opts.socket === undefined ? {} : { socket: opts.socket }),
        },
        { logger, removeOrphanContainers: true },
      );
      logger.info({ url: server.url, state: config.paths.stateDir }, 'skep serve is listening');
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
    });
}

function parsePort(value: string): number {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`invalid port '${value}'`);
  return port;
}
