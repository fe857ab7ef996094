/** `skep group list|create|rm`. */
import type { Command } from 'commander';
import { withContext } from '../context.js';
import { addCall, addListing } from '../command-shapes.js';
import { printOutcome } from '../output.js';

export function registerGroup(program: Command): void {
  const group = program.command('group').description('Manage groups of workloads');

  addListing(group, 'list', 'List groups', {
    load: () => withContext((ctx) => ctx.groups.list()),
    json: (groups) => ({
      groups: groups.map(({ name, registered_clients }) => ({ name, registered_clients })),
    }),
    headers: ['NAME', 'CLIENTS'],
    row: (g) => [g.name, g.registered_clients.join(',')],
  }).alias('ls');

  addCall(group, 'create <name>', 'Create a group', {
    run: (ctx, name) => ctx.groups.create(name),
    print: (created, opts) => printOutcome(opts, { name: created.name }, `group ${created.name} created`),
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
