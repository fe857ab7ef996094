/**
 * One writer process of the concurrency test. Argument: a JSON job
 * `{skepHome, userHome, workloadsDir, index, rounds, clients}`. Each round it registers the
 * clients in its own group, starts its workload (a file in workloadsDir), syncs, stops it,
 * syncs, and unregisters from its group; at the end it registers again with the workload
 * running. The workload list every process sees is the set of files in workloadsDir.
 */
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { ClientsService, type WorkloadEndpoint } from '../../../src/clients/index.js';
import { resolvePaths } from '../../../src/config/index.js';
import { GroupService } from '../../../src/groups/index.js';
import { writeFileAtomicSync } from '../../../src/shared/index.js';
import { openStore } from '../../../src/store/index.js';

interface Job {
  skepHome: string;
  userHome: string;
  workloadsDir: string;
  index: number;
  rounds: number;
  clients: string[];
}

const job = JSON.parse(process.argv[2]!) as Job;
const store = openStore(resolvePaths({ SKEP_HOME: job.skepHome }).databaseFile);
const groups = new GroupService(store);
const listWorkloads = (): WorkloadEndpoint[] =>
  readdirSync(job.workloadsDir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => {
      try {
        return JSON.parse(readFileSync(join(job.workloadsDir, f), 'utf8')) as WorkloadEndpoint;
      } catch {
        return undefined; // removed between readdir and read
      }
    })
    .filter((w): w is WorkloadEndpoint => w !== undefined);
const service = new ClientsService({
  store,
  groups,
  env: { HOME: job.userHome },
  platform: 'linux',
  listWorkloads,
});

const name = `w${job.index}`;
const group = `g${job.index}`;
const file = join(job.workloadsDir, `${name}.json`);
const setWorkload = (status: string) =>
  writeFileAtomicSync(
    file,
    JSON.stringify({
      name,
      group,
      status,
      transport_type: job.index % 2 === 0 ? 'sse' : 'streamable-http',
      port: 7000 + job.index,
    }),
  );

for (let round = 0; round < job.rounds; round++) {
  await service.registerMany(job.clients, [group, 'default']);
  setWorkload('running');
  await service.syncClientConfigs();
  setWorkload('stopped');
  await service.syncClientConfigs();
  rmSync(file, { force: true });
  await service.unregisterMany(job.clients, [group]);
}
setWorkload('running');
await service.registerMany(job.clients, [group]);
await service.syncClientConfigs();
await service.close();
store.close();
