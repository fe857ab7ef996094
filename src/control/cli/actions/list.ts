/**
 * `skep list`: the workloads as the API lists them, read from the state store. It builds only
 * the listing (`listWorkloads`), not the whole composition root: the command runs often, from
 * scripts and prompts, and should cost little more than starting Node.
 */
import { listWorkloads } from '../../app/index.js';
import { loadConfig } from '../../../config/index.js';
import { definedOnly, withoutAccessToken } from '../../../shared/index.js';
import { DEFAULT_GUARDRAILS_SUMMARY } from '../../../workloads/index.js';
import { type JsonOpt, printListing } from '../output.js';

export async function list(opts: JsonOpt & { all?: boolean; group?: string }): Promise<void> {
  const workloads = listWorkloads(loadConfig(), {
    all: opts.all === true,
    ...definedOnly({ group: opts.group }),
  });
  printListing(
    opts,
    { workloads },
    [
      'NAME',
      'PACKAGE',
      'STATUS',
      'URL',
      'PORT',
      'GROUP',
      'TOOLS',
      'SANDBOX',
      'CALLERS',
      'GUARDRAILS',
      'CREATED',
    ],
    // The table leaves out the access token; `--json` (and the API) give the working URL.
    workloads.map((w) => [
      w.name,
      w.package,
      w.status,
      withoutAccessToken(w.url),
      w.port,
      w.group,
      // A count keeps the table narrow; `skep mcp list tools NAME` and `--json` give the names.
      w.tools.length,
      w.sandbox,
      w.endpoint_access,
      guardrailsLabel(w.guardrails),
      shortTime(w.created_at),
    ]),
  );
  if (opts.json !== true && workloads.length === 0) process.stderr.write(`${emptyHint(opts)}\n`);
}

/**
 * The GUARDRAILS cell: `default` (what a new workload gets), `off`, or `custom`; the line
 * itself (`--json`, the API, the UI) names every detector and its action.
 */
function guardrailsLabel(summary: string): string {
  if (summary === 'off') return 'off';
  return summary === DEFAULT_GUARDRAILS_SUMMARY ? 'default' : 'custom';
}

/** `2026-11-28T10:43:45.123Z` → `2026-11-28 10:43` (UTC, as stored); `--json` keeps the full time. */
function shortTime(iso: string): string {
  const m = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})/.exec(iso);
  return m === null ? iso : `${m[1]} ${m[2]}`;
}

/** What to do when the listing is empty: start a server, or look at the stopped ones. */
function emptyHint(opts: { all?: boolean; group?: string }): string {
  const where = opts.group === undefined ? '' : ` in group ${opts.group}`;
  if (opts.all !== true) {
    const hidden = listWorkloads(loadConfig(), { all: true, ...definedOnly({ group: opts.group }) }).length;
    if (hidden > 0) return `no running workloads${where}; ${hidden} stopped or failed: skep list --all`;
  }
  return `no workloads${where}; start one with skep run <server> (skep registry list shows the catalog)`;
}
