/** `skep vmcp <group>`: a virtual workload over a group's workloads (`actions/vmcp.ts`). */
import { type Command, InvalidArgumentError } from 'commander';
import { lazyAction } from '../lazy-action.js';

function parsePort(value: string): number {
  const port = Number(value);
  if (value.trim() === '' || !Number.isInteger(port) || port < 1 || port > 65535)
    throw new InvalidArgumentError('Use a port number from 1 to 65535.');
  return port;
}

export function registerVmcp(program: Command): void {
  program
    .command('vmcp <group>')
    .description('Serve the workloads of a group as one MCP endpoint (a virtual workload)')
    .option('--name <name>', 'workload name (default: <group>-vmcp)')
    .option('--config <file>', 'vMCP config file (YAML or JSON): aggregation, outgoingAuth, operational, ...')
    .option('--proxy-port <port>', 'port of the endpoint (default: a free one)', parsePort)
    .option('--json', 'print JSON')
    .action(lazyAction(async () => (await import('../actions/vmcp.js')).serveGroup));
}
