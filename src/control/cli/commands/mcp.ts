/** `skep mcp list|call`: talk to a running workload through its proxy (`actions/mcp.ts`). */
import { Argument, type Command, InvalidArgumentError } from 'commander';
import { lazyAction } from '../lazy-action.js';

const LIST_KINDS = ['tools', 'resources', 'prompts'] as const;
export type ListKind = (typeof LIST_KINDS)[number];

function parseTimeout(value: string): number {
  const seconds = Number(value);
  if (value.trim() === '' || !Number.isFinite(seconds) || seconds <= 0)
    throw new InvalidArgumentError('Give the number of seconds to wait, e.g. --timeout 120.');
  return seconds * 1000;
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

export function registerMcp(program: Command): void {
  const mcp = program
    .command('mcp')
    .description(
      'Talk to a running workload through its proxy: list its tools, resources or prompts, call a tool',
    );

  mcp
    .command('list')
    .description("List a workload's tools, resources or prompts")
    .addArgument(new Argument('<kind>', 'what to list').choices(LIST_KINDS))
    .argument('<name>', 'workload name')
    .option('--timeout <seconds>', 'seconds to wait for each answer (default 60)', parseTimeout)
    .option('--json', 'print the list as JSON')
    .action(lazyAction(async () => (await import('../actions/mcp.js')).list));

  mcp
    .command('call')
    .description("Call a workload's tool and print what it returned")
    .argument('<name>', 'workload name')
    .argument('<tool>', 'tool name (as `skep mcp list tools` shows it)')
    .option(
      '--arg <key=value>',
      'a tool argument; the value is JSON when it parses (3, true, {"a":1}), else text (repeatable)',
      collect,
      [],
    )
    .option(
      '--json [arguments]',
      'print the raw result as JSON; a value gives the arguments as one JSON object',
    )
    .option('--timeout <seconds>', 'seconds to wait for the result (default 60)', parseTimeout)
    .action(lazyAction(async () => (await import('../actions/mcp.js')).call));
}
