/**
 * `skep cache prune [--dry-run]`: removes the package store entries (`npx://` and `uvx://`
 * packages installed once for all workloads) that no workload, running or stopped, uses.
 * `skep rm` does the same for the entries only the removed workload used.
 */
import type { Command } from 'commander';
import { withContext } from '../context.js';
import { type JsonOpt, printJson, printTable } from '../output.js';

interface PruneOpts extends JsonOpt {
  dryRun?: boolean;
}

async function prune(opts: PruneOpts): Promise<void> {
  const { prunePackageStores } = await import('../../../dataplane/runtime/index.js');
  const dryRun = opts.dryRun === true;
  const pruned = await withContext((ctx) =>
    prunePackageStores(
      ctx.config.paths.cacheDir,
      ctx.workloads.rows.list().map((r) => ({ name: r.name, image: r.config.image, env: r.config.env_vars })),
      { dryRun },
    ),
  );
  const entries = pruned.map((e) => ({ store: e.store, entry: e.key, path: e.dir }));
  if (opts.json === true) {
    printJson({ dry_run: dryRun, removed: dryRun ? [] : entries, would_remove: dryRun ? entries : [] });
    return;
  }
  if (entries.length === 0) {
    process.stdout.write('every package in the store is used by a workload; nothing to remove\n');
    return;
  }
  printTable(
    ['STORE', 'PACKAGE', 'PATH'],
    entries.map((e) => [e.store, e.entry, e.path]),
  );
  process.stdout.write(
    dryRun
      ? `${entries.length} unused package${entries.length === 1 ? '' : 's'} would be removed (run without --dry-run to remove)\n`
      : `removed ${entries.length} unused package${entries.length === 1 ? '' : 's'}\n`,
  );
}

export function registerCache(program: Command): void {
  const cache = program
    .command('cache')
    .description('Manage the package store the npx:// and uvx:// servers run from');
  cache
    .command('prune')
    .description('Remove the installed packages no workload (running or stopped) uses')
    .option('--dry-run', 'only list what would be removed')
    .option('--json', 'print JSON')
    .action(prune);
}
