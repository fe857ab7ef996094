/**
 * `skep serve`: the management API. Accepts the reference CLI's serve flags, and the ones
 * that open the API beyond this machine on purpose (issue 16, item 2).
 */
import { type Command, InvalidArgumentError } from 'commander';
import { startServer } from '../../api/server.js';
import { API_TOKEN_ENV, loadConfig } from '../../config/index.js';
import { createLogger, definedOnly } from '../../shared/index.js';

interface ServeFlags {
  host?: string;
  port?: number;
  socket?: string;
  allowRemote?: boolean;
  allowedOrigin: string[];
  tlsCert?: string;
  tlsKey?: string;
}

export function registerServe(program: Command): void {
  program
    .command('serve')
    .description(
      'Run the management API (default 127.0.0.1:8080; every TCP request but /health needs the API token)',
    )
    .option(
      '--host <host>',
      'bind address (default from config: 127.0.0.1); beyond loopback needs --allow-remote',
    )
    .option('--port <port>', 'TCP port (default from config: 8080)', (v) => parsePort(v))
    .option(
      '--socket <path>',
      'listen on a unix socket instead of TCP (mode 0660, no token; removed on exit)',
    )
    .option(
      '--allow-remote',
      'allow a --host that other machines can reach (a wildcard or a network address)',
    )
    .option(
      '--allowed-origin <origin>',
      'a browser origin allowed to call the API besides its own, e.g. https://ui.example.com (repeatable)',
      (value: string, previous: string[]) => [...previous, value],
      [] as string[],
    )
    .option('--tls-cert <file>', 'PEM certificate (chain): serve HTTPS (with --tls-key)')
    .option('--tls-key <file>', 'PEM private key of --tls-cert')
    .option(
      '--openapi',
      'accepted for compatibility; the OpenAPI document is always served at /api/openapi.json',
    )
    .allowUnknownOption(true)
    .action(async (opts: ServeFlags, command: Command) => {
      const logger = createLogger({ name: 'skep' });
      if (command.args.length > 0)
        logger.warn({ ignored: command.args }, 'ignoring unsupported serve arguments');
      const config = loadConfig();
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
    });
}

function parsePort(value: string): number {
  const port = Number(value);
  // InvalidArgumentError: commander reports it as a usage error (exit 2), without a stack trace.
  if (value.trim() === '' || !Number.isInteger(port) || port < 0 || port > 65535)
    throw new InvalidArgumentError('Use a port number from 0 to 65535.');
  return port;
}
