/**
 * Workload commands: `skep run`, `list`, `stop`, `restart`, `rm`, `logs`, `export`, and the
 * hidden `skep runner <name>` that the manager spawns detached for each workload.
 */
import { type Command, InvalidArgumentError } from 'commander';
import { lazyAction } from '../lazy-action.js';

const collect = (value: string, previous: string[] = []) => [...previous, value];

// InvalidArgumentError: commander reports a bad flag value as a usage error (exit 2).
function parsePort(value: string): number {
  const port = Number(value);
  if (value.trim() === '' || !Number.isInteger(port) || port < 1 || port > 65535)
    throw new InvalidArgumentError('Use a port number from 1 to 65535.');
  return port;
}

function parseLines(value: string): number {
  const lines = Number(value);
  if (value.trim() === '' || !Number.isInteger(lines) || lines < 0)
    throw new InvalidArgumentError('Give a number of lines, e.g. -n 50.');
  return lines;
}

function parseWait(value: string): number {
  const seconds = Number(value);
  if (value.trim() === '' || !Number.isFinite(seconds) || seconds <= 0)
    throw new InvalidArgumentError('Give the number of seconds to wait, e.g. --wait 300.');
  return seconds * 1000;
}

const WAIT_HELP =
  'seconds to wait for the server to answer (default: 120 for npx/uvx/cmd, 600 for an image, 60 for a remote URL)';

export function registerWorkloads(program: Command): void {
  program
    .command('run [server] [args...]')
    .description(
      'Run an MCP server: a registry name, an image, npx://<pkg>, uvx://<pkg> or cmd://<executable> ' +
        '(server args after --; for a local server, args naming an existing path here are made absolute)',
    )
    .option('--name <name>', 'workload name (derived from the server when omitted)')
    .option('--group <group>', 'group (default: default)')
    .option('-e, --env <KEY=VALUE>', 'environment variable for the server (repeatable)', collect, [])
    .option(
      '--secret <name,target=ENV>',
      'secret passed as an environment variable (repeatable)',
      collect,
      [],
    )
    .option('--transport <transport>', 'stdio, sse or streamable-http')
    .option('--proxy-port <port>', 'proxy port (default: a free port in the configured range)', parsePort)
    .option('--target-port <port>', 'port of an sse/streamable-http server', parsePort)
    .option('--proxy-mode <mode>', 'URL advertised to clients: streamable-http or sse')
    .option('--tools <names>', 'comma-separated tools to expose')
    .option('--sandbox <mode>', 'local servers: auto, bwrap (required) or off (run without isolation)')
    .option(
      '--guardrails <mode>',
      'default (redact its own secrets and known credentials in results) or off (no guardrails)',
    )
    .option(
      '--image-verification <policy>',
      "container images: check the image's cosign signature before it starts — warn (run, and report the outcome), " +
        'enabled or enforce (refuse unless verified) or disabled (no check); default: a registry entry that names its signer is checked under warn',
    )
    .option(
      '--image-verification-key <file>',
      'trusted cosign public key, a PEM file (repeatable); alone it means --image-verification warn',
      collect,
      [],
    )
    .option(
      '--image-verification-trusted-root <file>',
      "keyless signatures: a Sigstore trusted_root.json to verify Fulcio certificates and Rekor entries against (offline), or sigstore-public-good (Sigstore's public instance, fetched through TUF); alone it means --image-verification warn",
    )
    .option(
      '--image-verification-identity <identity>',
      "keyless: the signing certificate's identity (e-mail or URI), exactly (cosign's --certificate-identity)",
    )
    .option(
      '--image-verification-identity-regexp <regexp>',
      "keyless: a regular expression the certificate's whole identity must match (cosign's --certificate-identity-regexp)",
    )
    .option(
      '--image-verification-issuer <url>',
      "keyless: the certificate's OIDC issuer, exactly (cosign's --certificate-oidc-issuer)",
    )
    .option(
      '-v, --volume <HOST[:IN_SERVER][:ro]>',
      'grant the server a folder (repeatable): read-write unless :ro; a local server sees it at HOST, a container at IN_SERVER',
      collect,
      [],
    )
    .option(
      '--permission-profile <none|network|FILE>',
      "the server's permission profile: a built-in or a JSON file (default: the registry entry's, else network)",
    )
    .option(
      '--open-to-local-users',
      'let every local user and process call its tools (by default only clients with its access token can)',
    )
    .option('--from-config <file>', 'create from an exported run configuration (JSON)')
    .option('--wait <seconds>', WAIT_HELP, parseWait)
    .option(
      '--no-autostart',
      'do not start it again when skep serve starts (after a reboot); start it by hand',
    )
    .option(
      '--keep-on-failure',
      'keep a workload whose first start fails (status error, for skep logs); by default it is removed',
    )
    .option('--json', 'print JSON')
    .action(lazyAction(async () => (await import('../actions/workloads.js')).run));

  program
    .command('list')
    .alias('ls')
    .description('List running workloads (--all: every status)')
    .option('-a, --all', 'include stopped workloads')
    .option('--group <group>', 'only this group')
    .option('--json', 'print JSON')
    .action(lazyAction(async () => (await import('../actions/list.js')).list));

  program
    .command('upgrade-check [name]')
    .description(
      'Check workloads for newer images in the registry entries they came from (nothing is pulled)',
    )
    .option('-a, --all', 'include stopped workloads')
    .option('--group <group>', 'only this group')
    .option('--json', 'print JSON')
    .action(lazyAction(async () => (await import('../actions/workloads.js')).upgradeCheck));

  program
    .command('upgrade <name>')
    .description('Move a workload to the image its registry entry names now, keeping its configuration')
    .option('-e, --env <KEY=VALUE>', 'environment variable to add or override (repeatable)', collect, [])
    .option('--secret <name,target=ENV>', 'secret reference to add (repeatable)', collect, [])
    .option('--json', 'print JSON')
    .action(lazyAction(async () => (await import('../actions/workloads.js')).upgrade));

  for (const [verb, description] of [
    ['stop', 'Stop workloads (they keep their configuration)'],
    ['rm', 'Delete workloads'],
  ] as const) {
    program
      .command(`${verb} [names...]`)
      .description(description)
      .option('--group <group>', 'every workload of this group')
      .action(
        lazyAction(async () => {
          const { stopOrRemove } = await import('../actions/workloads.js');
          return (names: string[], opts: { group?: string }) => stopOrRemove(verb, names, opts);
        }),
      );
  }

  program
    .command('restart [names...]')
    .description('Restart workloads and wait until each answers again')
    .option('--group <group>', 'every workload of this group')
    .option('--wait <seconds>', WAIT_HELP, parseWait)
    .action(lazyAction(async () => (await import('../actions/workloads.js')).restart));

  program
    .command('logs <name>')
    .description(
      "Print a workload's server log (--proxy: the runner/proxy log); control characters are shown as \\xNN",
    )
    .option('-f, --follow', 'keep printing new lines')
    .option('--proxy', 'the runner and proxy log instead of the server log')
    .option('--raw', 'print the log as written (the runner writes JSON lines), no repeats collapsed')
    .option('-n, --lines <n>', 'last N lines', parseLines, 100)
    .action(lazyAction(async () => (await import('../actions/workloads.js')).logs));

  program
    .command('export <name> [file]')
    .description('Write the run configuration as JSON (to a file or stdout)')
    .action(lazyAction(async () => (await import('../actions/workloads.js')).exportConfig));

  program
    .command('runner <name>', { hidden: true })
    .description('Supervise one workload (started by skep; not for direct use)')
    .action(async (name: string) => {
      const { runnerMain } = await import('../../../dataplane/runner/main.js');
      process.exitCode = await runnerMain(name);
    });
}
