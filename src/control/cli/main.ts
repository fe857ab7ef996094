#!/usr/bin/env node
/**
 * The `skep` command line. Domain errors print their message and exit 1; usage errors exit 2;
 * no user error prints a stack trace, and output into a closed pipe ends quietly (`errors.ts`).
 */
import { Command, CommanderError } from 'commander';
import { SKEP_VERSION } from '../../shared/index.js';
import { registerCache } from './commands/cache.js';
import { registerClient } from './commands/client.js';
import { registerExtauth } from './commands/extauth.js';
import { registerGroup } from './commands/group.js';
import { registerMcp } from './commands/mcp.js';
import { registerOperator } from './commands/operator.js';
import { registerRegistry } from './commands/registry.js';
import { registerSecret } from './commands/secret.js';
import { registerServe } from './commands/serve.js';
import { registerService } from './commands/service.js';
import { registerSkill } from './commands/skill.js';
import { registerUi } from './commands/ui.js';
import { registerVmcp } from './commands/vmcp.js';
import { registerWorkloads } from './commands/workloads.js';
import { endQuietlyOnClosedOutput, reportError } from './errors.js';
import { type JsonOpt, printOutcome } from './output.js';

export function buildProgram(): Command {
  const program = new Command();
  program
    .name('skep')
    .description('Run, share and secure MCP tool servers')
    .version(SKEP_VERSION, '-V, --version', 'print the version')
    // The error is the first line; a pointer to the help, not the whole help, follows it.
    .showHelpAfterError("(run 'skep help <command>' or add --help for usage)")
    .exitOverride();

  program
    .command('version')
    .description('Print the version')
    .option('--json', 'print JSON')
    .action((opts: JsonOpt) => printOutcome(opts, { version: SKEP_VERSION }, `skep ${SKEP_VERSION}`));

  registerServe(program);
  registerService(program);
  registerUi(program);
  registerWorkloads(program);
  registerMcp(program);
  registerGroup(program);
  registerVmcp(program);
  registerExtauth(program);
  registerOperator(program);
  registerClient(program);
  registerSecret(program);
  registerSkill(program);
  registerRegistry(program);
  registerCache(program);
  return program;
}

export async function main(argv: string[]): Promise<number> {
  endQuietlyOnClosedOutput();
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    // A command may set its own exit status (e.g. `skill sync --check` → 2).
    return Number(process.exitCode ?? 0);
  } catch (err) {
    // commander has printed its own message (usage errors, --help, --version).
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    return reportError(err);
  }
}

const code = await main(process.argv);
process.exitCode = code;
