/** A ClientsService on a temp SKEP_HOME and a temp user HOME, with an in-memory workload list. */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { ClientsService, type WorkloadEndpoint } from '../../../src/clients/index.js';
import { GroupService } from '../../../src/groups/index.js';
import { openStore, type Store } from '../../../src/store/index.js';
import { tempHome } from '../../helpers/home.js';

export interface Harness {
  service: ClientsService;
  store: Store;
  groups: GroupService;
  home: string;
  env: NodeJS.ProcessEnv;
  /** The workloads the injected `listWorkloads` returns; tests mutate it. */
  workloads: WorkloadEndpoint[];
}

export function harness(t: TestContext): Harness {
  const skep = tempHome(t, 'skep-clients-');
  const home = join(skep.dir, 'user-home');
  mkdirSync(home, { recursive: true });
  // Only HOME: no XDG/APPDATA/CODEX_HOME from the machine running the tests leaks in.
  const env: NodeJS.ProcessEnv = { HOME: home };
  const store = openStore(skep.config.paths.databaseFile);
  const groups = new GroupService(store);
  const workloads: WorkloadEndpoint[] = [];
  const service = new ClientsService({
    store,
    groups,
    env,
    platform: 'linux',
    listWorkloads: () => workloads,
  });
  t.after(async () => {
    await service.close();
    store.close();
  });
  return { service, store, groups, home, env, workloads };
}

export function running(name: string, port: number, extra: Partial<WorkloadEndpoint> = {}): WorkloadEndpoint {
  return { name, group: 'default', status: 'running', transport_type: 'streamable-http', port, ...extra };
}
