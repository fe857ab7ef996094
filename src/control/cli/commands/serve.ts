/**
 * `skep serve`: the management API. Accepts the reference CLI's serve flags, and the ones
 * that open the API beyond this machine on purpose (`--allow-remote`, `--allowed-origin`, TLS).
 */
import { type Command, InvalidArgumentError } from 'commander';
import { lazyAction } from '../lazy-action.js';

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
    .action(lazyAction(async () => (await import('../actions/serve.js')).serve));
}

function parsePort(value: string): number {
  const port = Number(value);
  // InvalidArgumentError: commander reports it as a usage error (exit 2), without a stack trace.
  if (value.trim() === '' || !Number.isInteger(port) || port < 0 || port > 65535)
    throw new InvalidArgumentError('Use a port number from 0 to 65535.');
  return port;
}
