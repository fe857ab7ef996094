/** `skep extauth validate -f file.yaml`: offline validation of MCPExternalAuthConfig documents (`actions/extauth.ts`). */
import type { Command } from 'commander';
import { lazyAction } from '../lazy-action.js';

export function registerExtauth(program: Command): void {
  const extauth = program.command('extauth').description('Work with MCPExternalAuthConfig resources');
  extauth
    .command('validate')
    .description('Validate MCPExternalAuthConfig YAML/JSON offline (Secrets are not read)')
    .requiredOption('-f, --file <path>', "file with one or more documents ('-' for stdin)")
    .option('--json', 'print JSON')
    .action(lazyAction(async () => (await import('../actions/extauth.js')).validate));
}
