/** `skep client status|list|register|remove`: discover clients and manage their registrations. */
import type { Command } from 'commander';
import { withContext } from '../context.js';
import { addListing } from '../command-shapes.js';
import { type JsonOpt, printOutcome } from '../output.js';

const collect = (value: string, previous: string[]): string[] => [...previous, value];

export function registerClient(program: Command): void {
  const client = program
    .command('client')
    .description('Register IDE and agent clients so they see running servers');

  addListing(client, 'status', 'Show every supported client: installed, registered, skills support', {
    load: () => withContext((ctx) => ctx.clients.status()),
    json: (clients) => ({ clients }),
    headers: ['CLIENT', 'INSTALLED', 'REGISTERED', 'SKILLS'],
    row: (c) => [c.client_type, c.installed, c.registered, c.supports_skills],
  });

  addListing(client, 'list', 'List registered clients and their groups', {
    load: () => withContext((ctx) => ctx.clients.list()),
    json: (clients) => clients,
    headers: ['CLIENT', 'GROUPS'],
    row: (c) => [c.name, c.groups.join(',')],
  }).alias('ls');

  client
    .command('register <type>')
    .description(
      "Register a client in groups (default: 'default') and write their running servers into its config",
    )
    .option('--group <name>', 'group to register in (repeatable)', collect, [])
    .option('--json', 'print JSON')
    .action(async (type: string, opts: { group: string[] } & JsonOpt) => {
      const result = await withContext((ctx) => ctx.clients.register(type, opts.group));
      printOutcome(opts, result, `client ${result.name} registered in ${result.groups.join(', ')}`);
    });

  client
    .command('remove <type>')
    .alias('rm')
    .description(
      "Unregister a client (from one group with --group) and remove Skep's entries from its config",
    )
    .option('--group <name>', 'only unregister from this group (repeatable)', collect, [])
    .option('--json', 'print JSON')
    .action(async (type: string, opts: { group: string[] } & JsonOpt) => {
      await withContext((ctx) => ctx.clients.unregisterMany([type], opts.group));
      const scope = opts.group.length > 0 ? ` from ${opts.group.join(', ')}` : '';
      printOutcome(
        opts,
        { name: type, removed_from: opts.group.length > 0 ? opts.group : 'all' },
        `client ${type} unregistered${scope}`,
      );
    });
}
