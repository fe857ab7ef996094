/**
 * Process entry of a workload runner: `node dist/runner.mjs runner <name>` (bundled) or
 * `node --import tsx src/dataplane/runner/entry.ts runner <name>`. The words `runner <name>` match the
 * CLI command, so a runner's command line is recognisable (`runnerAlive` checks it).
 */
import { runnerMain } from './main.js';

const args = process.argv.slice(2);
const name = args[0] === 'runner' ? args[1] : args[0];
if (name === undefined || name === '') {
  process.stderr.write('usage: runner.mjs runner <workload-name>\n');
  process.exitCode = 2;
} else {
  process.exitCode = await runnerMain(name);
}
