/**
 * `skep vmcp <group>`: a virtual workload serving one MCP endpoint over the other running
 * workloads of a group (issue 20). `--config` reads the reference's vMCP config file (YAML or
 * JSON, `thv vmcp serve --config`'s format); without it the defaults apply (prefix conflict
 * resolution `{workload}_`, no outgoing auth). The workload is then listed, stopped,
 * restarted, exported and registered into clients like any other.
 */
import { type Command, InvalidArgumentError } from 'commander';
import { parse as parseYaml } from 'yaml';
import { SkepError } from '../../shared/index.js';
import type { CreateWorkloadRequest } from '../../workloads/index.js';
import { withContext } from '../context.js';
import { readInputFile } from '../input-file.js';
import { printJson } from '../output.js';
import { waitForStart } from '../start-wait.js';

function parsePort(value: string): number {
  const port = Number(value);
  if (value.trim() === '' || !Number.isInteger(port) || port < 1 || port > 65535)
    throw new InvalidArgumentError('Use a port number from 1 to 65535.');
  return port;
}

/** Reads a vMCP config file (YAML is a superset of JSON). */
export function readVmcpConfigFile(path: string): Record<string, unknown> {
  const text = readInputFile(path, { dashIsStdin: false });
  let value: unknown;
  try {
    value = parseYaml(text);
  } catch (err) {
    throw new SkepError('bad_request', `${path} is not valid YAML: ${(err as Error).message}`);
  }
  if (value === null || value === undefined) return {};
  if (typeof value !== 'object' || Array.isArray(value))
    throw new SkepError(
      'bad_request',
      `${path} must hold a vMCP config object (aggregation, outgoingAuth, ...)`,
    );
  return value as Record<string, unknown>;
}

export function registerVmcp(program: Command): void {
  program
    .command('vmcp <group>')
    .description('Serve the workloads of a group as one MCP endpoint (a virtual workload)')
    .option('--name <name>', 'workload name (default: <group>-vmcp)')
    .option('--config <file>', 'vMCP config file (YAML or JSON): aggregation, outgoingAuth, operational, ...')
    .option('--proxy-port <port>', 'port of the endpoint (default: a free one)', parsePort)
    .option('--json', 'print JSON')
    .action(
      async (group: string, opts: { name?: string; config?: string; proxyPort?: number; json?: boolean }) => {
        const vmcp = opts.config === undefined ? {} : readVmcpConfigFile(opts.config);
        const request: CreateWorkloadRequest = { name: opts.name ?? `${group}-vmcp`, group, vmcp };
        if (opts.proxyPort !== undefined) request.proxy_port = opts.proxyPort;
        const result = await withContext(async (ctx) => {
          const created = await ctx.workloads.create(request);
          const outcome = await waitForStart(ctx, created.name, { timeoutMs: 30_000, out: process.stderr });
          const row = ctx.workloads.list({ all: true }).find((w) => w.name === created.name);
          if (outcome.kind === 'failed' || outcome.kind === 'timeout') {
            throw new SkepError(
              'bad_gateway',
              `virtual workload ${created.name} did not start: ${outcome.context}`,
            );
          }
          return { name: created.name, port: created.port, url: row?.url, status: row?.status_context ?? '' };
        });
        if (opts.json === true) printJson(result);
        else
          process.stdout.write(
            `virtual workload ${result.name} serves group ${group}: ${result.url ?? `port ${result.port}`}\n`,
          );
      },
    );
}
