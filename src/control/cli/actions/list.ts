/**
 * `skep list`: the workloads as the API lists them, read from the state store. It builds only
 * the listing (`listWorkloads`), not the whole composition root: the command runs often, from
 * scripts and prompts, and should cost little more than starting Node.
 */
import { listWorkloads } from '../../app/index.js';
import { loadConfig } from '../../../config/index.js';
import { definedOnly, withoutAccessToken } from '../../../shared/index.js';
import { type JsonOpt, printListing } from '../output.js';

export async function list(opts: JsonOpt & { all?: boolean; group?: string }): Promise<void> {
  const workloads = listWorkloads(loadConfig(), {
    all: opts.all === true,
    ...definedOnly({ group: opts.group }),
  });
  printListing(
    opts,
    { workloads },
    ['NAME', 'PACKAGE', 'STATUS', 'URL', 'PORT', 'GROUP', 'TOOLS', 'SANDBOX', 'CALLERS', 'CREATED'],
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
      w.created_at,
    ]),
  );
}
