/** `skep client status|list|register|remove`: discover clients and manage their registrations. */
import type { Command } from 'commander';
import { withContext } from '../context.js';
import { printJson, printTable } from '../output.js';

const collect = (value: string, previous: string[]): string[] => [...previous, value];

export function registerClient(program: Command): void {
  const client = program
    .command('client')
    .description('Register IDE and agent clients so they see running servers');

  client
    .command('status')
    .description('Show every supported client: installed, registered, skills support')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const clients = await withContext((ctx) => ctx.clients.status());
      if (opts.json === true) printJson({ clients });
      else
        printTable(
          ['CLIENT', 'INSTALLED', 'REGISTERED', 'SKILLS'],
          clients.map((c) => [c.client_type, c.installed, c.registered, c.supports_skills]),
        );
    });

  client
    .command('list')
    .alias('ls')
    .description('List registered clients and their groups')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const clients = await withContext((ctx) => ctx.clients.list());
      if (opts.json === true) printJson(clients);
      else
        printTable(
          ['CLIENT', 'GROUPS'],
          clients.map((c) => [c.name, c.groups.join(',')]),
        );
    });

  client
    .command('register <type>')
    .description(
      "Register a client in groups (default: 'default') and write their running servers into its config",
    )
    .option('--group <name>', 'group to register in (repeatable)', collect, [])
    .option('--json', 'print JSON')
    .action(async (type: string, opts: { group: string[]; json?: boolean }) => {
      const result = await withContext((ctx) => ctx.clients.register(type, opts.group));
      if (opts.json === true) printJson(result);
      else process.stdout.write(`client ${result.name} registered in ${result.groups.join(', ')}\n`);
    });

  client
    .command('remove <type>')
    .alias('rm')
    .description(
      "Unregister a client (from one group with --group) and remove Skep's entries from its config",
    )
    .option('--group <name>', 'only unregister from this group (repeatable)', collect, [])
    .option('--json', 'print JSON')
    .action(async (type: string, opts: { group: string[]; json?: boolean }) => {
      await withContext((ctx) => ctx.clients.unregisterMany([type], opts.group));
      const scope = opts.group.length > 0 ? ` from ${opts.group.join(', ')}` : '';
      if (opts.json === true)
        printJson({ name: type, removed_from: opts.group.length > 0 ? opts.group : 'all' });
      else process.stdout.write(`client ${type} unregistered${scope}\n`);
    });
}
