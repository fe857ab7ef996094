/**
 * `skep run --image-verification` reaches the run configuration through the manager's create
 * options, over what a registry entry's provenance gives: a policy replaces the entry's `warn`
 * and keeps its key and keyless fields, given keys replace the entry's key, `null` (disabled)
 * removes the check, and a remote entry refuses the field by name before anything is stored.
 * The runners are never started (a recorded pid no process has).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createContext } from '../../../src/control/app/index.js';
import { isSkepError } from '../../../src/shared/index.js';
import { type RegistryServerSpec, WorkloadManager } from '../../../src/workloads/index.js';
import { tempHome } from '../../helpers/home.js';

const ENTRY_KEY = '-----BEGIN PUBLIC KEY-----\nentry\n-----END PUBLIC KEY-----\n';
const FLAG_KEY = '-----BEGIN PUBLIC KEY-----\nflag\n-----END PUBLIC KEY-----\n';

const ENTRIES: Record<string, RegistryServerSpec> = {
  signed: {
    image: 'ghcr.io/acme/signed:1',
    transport: 'stdio',
    provenance: { public_key: ENTRY_KEY, signer_identity: 'release.yml', cert_issuer: 'issuer' },
  },
  remote: { image: '', url: 'https://mcp.example.com/mcp', transport: 'streamable-http' },
};

test('create options: the flag over the registry entry’s check', async (t) => {
  const home = tempHome(t);
  const ctx = createContext(home.config);
  const resolve = async (name: string) => ENTRIES[name];
  const manager = new WorkloadManager({
    store: ctx.store,
    config: home.config,
    groups: ctx.groups,
    secretLookup: async () => undefined,
    resolveRegistryServer: resolve,
    // An engine that would run any image; never asked to, since no runner starts.
    containers: { check: async () => undefined, remove: async () => undefined },
    // Above Linux's pid_max: no runner is started.
    spawnRunner: () => 99_999_999,
  });
  ctx.groups.attachMembers(manager);
  t.after(async () => {
    await manager.close();
    await ctx.close();
  });
  const create = (name: string, options: Parameters<WorkloadManager['create']>[1]) =>
    manager.create({ name, registry: 'default', server: 'signed' }, options);

  await create('by-default', {});
  assert.deepEqual(manager.exportConfig('by-default').image_verification, {
    policy: 'warn',
    public_keys: [ENTRY_KEY],
    signer_identity: 'release.yml',
    cert_issuer: 'issuer',
  });

  await create('enforced', { imageVerification: { policy: 'enforce' } });
  assert.deepEqual(manager.exportConfig('enforced').image_verification, {
    policy: 'enforce',
    public_keys: [ENTRY_KEY],
    signer_identity: 'release.yml',
    cert_issuer: 'issuer',
  });

  await create('own-key', { imageVerification: { policy: 'warn', public_keys: [FLAG_KEY] } });
  assert.deepEqual(manager.exportConfig('own-key').image_verification?.public_keys, [FLAG_KEY]);

  await create('unchecked', { imageVerification: null });
  assert.equal(manager.exportConfig('unchecked').image_verification, undefined);

  // Refused by the run configuration's own check, before anything is stored.
  await assert.rejects(
    manager.create(
      { name: 'remote', registry: 'default', server: 'remote' },
      { imageVerification: { policy: 'warn' } },
    ),
    (err: unknown) =>
      isSkepError(err) &&
      err.code === 'unsupported_field' &&
      err.message.startsWith('image_verification is not supported for a remote server'),
  );
  assert.equal(
    manager.rows.list().some((r) => r.name === 'remote'),
    false,
  );
});
