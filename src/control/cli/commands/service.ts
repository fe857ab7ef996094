/** `skep service install|uninstall|status`: start `skep serve` with the user's session (`actions/service.ts`). */
import type { Command } from 'commander';
import { lazyAction } from '../lazy-action.js';

const actions = () => import('../actions/service.js');

export function registerService(program: Command): void {
  const service = program
    .command('service')
    .description(
      'Start skep serve with your session (a systemd user unit or a launchd agent), so workloads come back after a reboot',
    );
  service
    .command('install')
    .description('Write the unit for skep serve and enable it (systemctl --user / launchctl)')
    .option('--no-start', 'only write the unit file; print the commands that enable it')
    .option('--json', 'print JSON')
    .action(lazyAction(async () => (await actions()).serviceInstall));
  service
    .command('uninstall')
    .description('Stop and disable skep serve as a service and remove its unit file')
    .option('--json', 'print JSON')
    .action(lazyAction(async () => (await actions()).serviceUninstall));
  service
    .command('status')
    .description('Say whether skep serve is installed as a service, what it runs and whether it is running')
    .option('--json', 'print JSON')
    .action(lazyAction(async () => (await actions()).serviceStatus));
}
