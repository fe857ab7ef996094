/**
 * `skep vmcp <group>`: a virtual workload serving one MCP endpoint over the other running
 * workloads of a group. `--config` reads the reference's vMCP config file (YAML or
 * JSON, `thv vmcp serve --config`'s format); without it the defaults apply (prefix conflict
 * resolution `{workload}_`, no outgoing auth). The workload is then listed, stopped,
 * restarted, exported and registered into clients like any other.
 */
import { parse as parseYaml } from 'yaml';
import { SkepError } from '../../../shared/index.js';
import type { CreateWorkloadRequest } from '../../../workloads/index.js';
import { withContext } from '../context.js';
import { readInputFile } from '../input-file.js';
import { printJson } from '../output.js';
import { waitForStart } from '../start-wait.js';

/** Reads a vMCP config file (YAML is a superset of JSON). */
export function readVmcpConfigFile(path: string): Record<string, unknown> {
  const text = readInputFile(path, { dashIsStdin: false });
  let value: unknown;
  try {
    value = parseYaml(text);
  } catch (err) {
    throw new SkepError('invalid_config', `${path} is not valid YAML: ${(err as Error).message}`);
  }
  if (value === null || value === undefined) return {};
  if (typeof value !== 'object' || Array.isArray(value))
    throw new SkepError(
      'invalid_config',
      `${path} must hold a vMCP config object (aggregation, outgoingAuth, ...)`,
    );
  return value as Record<string, unknown>;
}

export async function serveGroup(
  group: string,
  opts: { name?: string; config?: string; proxyPort?: number; json?: boolean },
): Promise<void> {
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
}
