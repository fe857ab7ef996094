/** `skep group list|create|rm`. */
import type { Command } from 'commander';
import { withContext } from '../context.js';
import { type JsonOpt, printListing, printOutcome } from '../output.js';

export function registerGroup(program: Command): void {
  const group = program.command('group').description('Manage groups of workloads');

  group
    .command('list')
    .alias('ls')
    .description('List groups')
    .option('--json', 'print JSON')
    .action(async (opts: JsonOpt) => {
      const groups = await withContext((ctx) => ctx.groups.list());
      printListing(
        opts,
        { groups: groups.map(({ name, registered_clients }) => ({ name, registered_clients })) },
        ['NAME', 'CLIENTS'],
        groups.map((g) => [g.name, g.registered_clients.join(',')]),
      );
    });

  group
    .command('create <name>')
    .description('Create a group')
    .option('--json', 'print JSON')
    .action(async (name: string, opts: JsonOpt) => {
      const created = await withContext((ctx) => ctx.groups.create(name));
      printOutcome(opts, { name: created.name }, `group ${created.name} created`);
    });

  group
    .command('rm <name>')
    .description("Delete a group; its workloads move to 'default' unless --with-workloads")
    .option('--with-workloads', 'delete the group’s workloads too')
    .action(async (name: string, opts: { withWorkloads?: boolean }) => {
      await withContext((ctx) => ctx.groups.delete(name, { withWorkloads: opts.withWorkloads === true }));
      process.stdout.write(`group ${name} deleted\n`);
    });
}
