/** `skep group list|create|rm`. */
import type { Command } from 'commander';
import { withContext } from '../context.js';
import { addCall, addListing } from '../command-shapes.js';
import { printOutcome } from '../output.js';
import { isSkepError, SkepError } from '../../../shared/index.js';

/** The refusal of `group rm` in the CLI's words: which workloads, and the two ways on. */
function notEmpty(group: string, err: SkepError): SkepError {
  const strings = (value: unknown) =>
    Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
  const held = strings(err.details?.['workloads']);
  const virtual = new Set(strings(err.details?.['virtual']));
  if (held.length === 0) return err;
  const labels = held.map((w) => (virtual.has(w) ? `${w} (virtual MCP server)` : w));
  const quoted = /[\s']/.test(group) ? `'${group.replace(/'/g, "'\\''")}'` : group;
  const them = held.length === 1 ? 'it' : 'them';
  return new SkepError(
    'group_not_empty',
    `group ${group} still holds ${held.length} workload${held.length === 1 ? '' : 's'}: ${labels.join(', ')}; nothing was changed\n` +
      `  'skep group rm ${quoted} --with-workloads' deletes ${them} with the group; 'skep rm ${held.join(' ')}' removes ${them} first`,
    { details: { workloads: held } },
  );
}

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
    .description('Delete a group; one that still holds workloads is refused unless --with-workloads')
    .option('--with-workloads', 'delete the group’s workloads with it')
    .action(async (name: string, opts: { withWorkloads?: boolean }) => {
      await withContext((ctx) =>
        ctx.groups.delete(name, { withWorkloads: opts.withWorkloads === true }).catch((err: unknown) => {
          throw isSkepError(err) && err.code === 'group_not_empty' ? notEmpty(name, err) : err;
        }),
      );
      process.stdout.write(`group ${name} deleted\n`);
    });
}
