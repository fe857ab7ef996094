/** `skep registry list|search|info|set-source|refresh`: browse and configure the server registry. */
import type { Command } from 'commander';
import type { CatalogServer, FoundServer } from '../../../registry/index.js';
import { findExecutable, terminalSafe } from '../../../shared/index.js';
import { addCall } from '../command-shapes.js';
import { withContext } from '../context.js';
import { UsageError } from '../errors.js';
import { type JsonOpt, printJson, printListing, printOutcome } from '../output.js';

/** Every matching server, following pages of the catalog view. */
async function allServers(
  list: (
    q: string | undefined,
    page: number,
  ) => Promise<{ items: CatalogServer[]; metadata: { total: number } }>,
  q: string | undefined,
): Promise<CatalogServer[]> {
  const out: CatalogServer[] = [];
  for (let page = 1; ; page++) {
    const result = await list(q, page);
    out.push(...result.items);
    if (result.items.length === 0 || out.length >= result.metadata.total) return out;
  }
}

function kindOf(s: CatalogServer): string {
  if ((s.remotes?.length ?? 0) > 0) return 'remote';
  return s.packages?.[0]?.registryType ?? '-';
}

function transportOf(s: CatalogServer): string {
  return s.remotes?.[0]?.type ?? s.packages?.[0]?.transport.type ?? '-';
}

/**
 * What an entry needs on this machine to start, and whether this machine has it: npx (Node.js),
 * uvx (uv), a program, or a container engine (checked when `skep run` creates it).
 */
function runsWith(found: FoundServer): string {
  if (found.is_remote) return 'nothing local: a remote server, reached over the network';
  const image = found.server.image;
  const tool = /^(npx|uvx):\/\//.exec(image)?.[1];
  if (tool !== undefined) {
    const here = findExecutable(tool, process.env) !== undefined;
    const get = tool === 'npx' ? 'install Node.js' : 'install uv: https://docs.astral.sh/uv/';
    return `${tool} (${tool === 'npx' ? 'Node.js' : 'uv'}); ${here ? 'found on this machine' : `not found on this machine: ${get}`}`;
  }
  if (image.startsWith('cmd://')) return `the program ${image.slice('cmd://'.length)}`;
  return (
    'a container engine (Docker or Podman); for Podman without a running service: ' +
    "'systemctl --user start podman.socket' (or 'podman system service')"
  );
}

/** `registry info`: with `--json` the found server as the API answers it, else `Field: value` lines. */
function printFound(found: FoundServer, opts: JsonOpt): void {
  if (opts.json === true) {
    printJson(
      found.is_remote
        ? { is_remote: true, remote_server: found.remote_server }
        : { is_remote: false, server: found.server },
    );
    return;
  }
  const s = found.is_remote ? found.remote_server : found.server;
  const rows: [string, string][] = [
    ['Name', s.name],
    ['Title', s.title ?? ''],
    ['Description', s.description],
    [found.is_remote ? 'URL' : 'Image', found.is_remote ? found.remote_server.url : found.server.image],
    ['Transport', s.transport],
    ['Tier', s.tier],
    ['Repository', s.repository_url ?? ''],
    ['Tools', s.tools.join(', ')],
    ['Tags', (s.tags ?? []).join(', ')],
  ];
  if (!found.is_remote && found.server.args !== undefined) rows.push(['Args', found.server.args.join(' ')]);
  for (const env of s.env_vars ?? []) {
    const flags = [
      env.required === true ? 'required' : 'optional',
      env.secret === true ? 'secret' : '',
    ].filter(Boolean);
    rows.push([`Env ${env.name}`, `${env.description ?? ''} (${flags.join(', ')})`]);
  }
  if (found.is_remote) {
    for (const h of found.remote_server.headers ?? []) rows.push([`Header ${h.name}`, h.description ?? '']);
  }
  rows.push(['Runs with', runsWith(found)]);
  const required = (s.env_vars ?? []).filter((e) => e.required === true && (e.default ?? '') === '');
  if (required.length > 0) {
    const short = s.name.split('/').pop() ?? s.name;
    const flags = required.map((e) =>
      e.secret === true ? `--secret <secret>,target=${e.name}` : `-e ${e.name}=<value>`,
    );
    rows.push(['Run it', `skep run ${short} ${flags.join(' ')}`]);
  }
  // A registry's entry is someone else's text.
  for (const [k, v] of rows) if (v !== '') process.stdout.write(terminalSafe(`${`${k}:`.padEnd(14)}${v}\n`));
}

export function registerRegistry(program: Command): void {
  const registry = program
    .command('registry')
    .description('Browse the server registry and choose its source');

  /** Every server matching `q` (all of them without one), with the registry's warning on stderr. */
  const printServers = async (q: string | undefined, opts: JsonOpt) => {
    const { servers, warning } = await withContext((ctx) =>
      allServers((query, page) => ctx.registry.listCatalogServers({ q: query, page, limit: 200 }), q).then(
        (found) => ({ servers: found, warning: ctx.registry.lastWarning() }),
      ),
    );
    if (warning !== undefined) process.stderr.write(`warning: ${terminalSafe(warning)}\n`);
    printListing(
      opts,
      { servers },
      ['NAME', 'KIND', 'TRANSPORT', 'DESCRIPTION'],
      servers.map((s) => [s.name, kindOf(s), transportOf(s), s.description]),
    );
  };

  registry
    .command('list')
    .alias('ls')
    .description('List every server of the registry')
    .option('--json', 'print JSON')
    .action((opts: JsonOpt) => printServers(undefined, opts));

  registry
    .command('search <query>')
    .description('List servers whose name or description contains <query> (case-insensitive)')
    .option('--json', 'print JSON')
    .action((query: string, opts: JsonOpt) => printServers(query, opts));

  addCall(registry, 'info <name>', 'Show a server by full name or unique short name', {
    run: (ctx, name) => ctx.registry.findServer(name),
    print: printFound,
  });

  registry
    .command('set-source')
    .description('Choose where the default registry comes from (exactly one of the options)')
    .option('--url <url>', 'a registry JSON document (or a registry API base URL, detected)')
    .option('--api-url <url>', 'the base URL of an MCP registry v0.1 API')
    .option('--local-path <path>', 'a registry JSON file')
    .option('--builtin', 'go back to the built-in catalog')
    .option('--allow-private-ip', 'allow http:// and private or loopback addresses')
    .option('--json', 'print JSON')
    .action(
      async (
        opts: {
          url?: string;
          apiUrl?: string;
          localPath?: string;
          builtin?: boolean;
          allowPrivateIp?: boolean;
        } & JsonOpt,
      ) => {
        const chosen = [
          opts.url,
          opts.apiUrl,
          opts.localPath,
          opts.builtin === true ? 'builtin' : undefined,
        ].filter((v) => v !== undefined);
        if (chosen.length !== 1) {
          throw new UsageError('give exactly one of --url, --api-url, --local-path or --builtin');
        }
        const result = await withContext((ctx) =>
          ctx.registry.configure('default', {
            url: opts.url,
            api_url: opts.apiUrl,
            local_path: opts.localPath,
            allow_private_ip: opts.allowPrivateIp === true,
          }),
        );
        printOutcome(opts, result, `registry source set (type ${result.type})`);
      },
    );

  registry
    .command('refresh')
    .description('Reload the registry from its source now')
    .option('--json', 'print JSON')
    .action(async (opts: JsonOpt) => {
      const result = await withContext((ctx) => ctx.registry.refresh('default'));
      printOutcome(opts, result, `registry refreshed: ${result.server_count} servers (type ${result.type})`);
    });
}
