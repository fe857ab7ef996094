/**
 * `skep list` without the rest of the composition root: the workloads' rows from the state
 * store, shown as the API lists them. The rows are read as a runner reads them (trusted:
 * only Skep writes them, after validating), so listing compiles no run-configuration schema.
 */
import type { SkepConfig } from '../../config/index.js';
import { GroupService } from '../../groups/index.js';
import { openStore } from '../../store/index.js';
import { type ListOptions, summariesOf, type WorkloadSummary, WorkloadStore } from '../../workloads/index.js';

export function listWorkloads(config: SkepConfig, options: ListOptions = {}): WorkloadSummary[] {
  const store = openStore(config.paths.databaseFile);
  try {
    if (options.group !== undefined) new GroupService(store).require(options.group);
    return summariesOf(config, new WorkloadStore(store).list(options.group), options.all === true);
  } finally {
    store.close();
  }
}
