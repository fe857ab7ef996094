#!/usr/bin/env node
/** The `skep` command line. Domain errors print their message and exit 1; usage errors exit 2. */
import { Command, CommanderError } from 'commander';
import { isSkepError, SKEP_VERSION } from '../shared/index.js';
import { registerClient } from './commands/client.js';
import { registerExtauth } from './commands/extauth.js';
import { registerGroup } from './commands/group.js';
import { registerOperator } from './commands/operator.js';
import { registerRegistry } from './commands/registry.js';
import { registerSecret } from './commands/secret.js';
import { registerServe } from './commands/serve.js';
import { registerSkill } from './commands/skill.js';
import { registerUi } from './commands/ui.js';
import { registerWorkloads } from './commands/workloads.js';
import { printJson } from './output.js';

export function buildProgram(): Command {
  const program = new Command();
  program
    .name('skep')
    .description('Run, share and secure MCP tool servers')
    .version(SKEP_VERSION, '-V, --version', 'print the version')
    .showHelpAfterError()
    .exitOverride();

  program
    .command('version')
    .description('Print the version')
    .option('--json', 'print JSON')
    .action((opts: { json?: boolean }) => {
      if (opts.json === true) printJson({ version: SKEP_VERSION });
      else process.stdout.write(`skep ${SKEP_VERSION}\n`);
    });

  registerServe(program);
  registerUi(program);
  registerWorkloads(program);
  registerGroup(program);
  registerExtauth(program);
  registerOperator(program);
  registerClient(program);
  registerSecret(program);
  registerSkill(program);
  registerRegistry(program);
  return program;
}

export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    // A command may set its own exit status (e.g. `skill sync --check` → 2).
    return Number(process.exitCode ?? 0);
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    if (isSkepError(err)) {
      process.stderr.write(`error: ${err.message}\n`);
      return 1;
    }
    process.stderr.write(`error: ${(err as Error).stack ?? String(err)}\n`);
    return 1;
  }
}

const code = await main(process.argv);
process.exitCode = code;
