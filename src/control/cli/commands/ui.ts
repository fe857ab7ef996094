/** `skep ui`: the web UI of the running `skep serve`, through a one-time login link (`actions/ui.ts`). */
import type { Command } from 'commander';
import { lazyAction } from '../lazy-action.js';

export function registerUi(program: Command): void {
  program
    .command('ui')
    .description('Open the web UI of the running skep serve in a browser (a one-time login URL)')
    .option('--print', 'only print the URL; do not open a browser')
    .action(lazyAction(async () => (await import('../actions/ui.js')).openUi));
}
