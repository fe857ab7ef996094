// status.configHash and the work queue: properties, not fixed values.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { configHash } from '../../../src/control/operator/config-hash.js';
import { referencedConfigs } from '../../../src/control/operator/references.js';
import { WorkQueue } from '../../../src/control/operator/workqueue.js';

describe('configHash (status.configHash: hash of the current configuration)', () => {
  const spec = {
    type: 'awsSts',
    awsSts: { region: 'us-east-1', roleMappings: [{ claim: 'a', roleArn: 'x' }], sessionDuration: 3600 },
  };
  it('is deterministic and independent of key order', () => {
    const reordered = {
      awsSts: { sessionDuration: 3600, roleMappings: [{ roleArn: 'x', claim: 'a' }], region: 'us-east-1' },
      type: 'awsSts',
    };
    assert.equal(configHash(spec), configHash(structuredClone(spec)));
    assert.equal(configHash(spec), configHash(reordered));
    assert.match(configHash(spec), /^[0-9a-f]{16}$/);
  });
  it('changes when any field changes, including defaulted ones and list order', () => {
    const variants = [
      { ...spec, awsSts: { ...spec.awsSts, sessionDuration: 3601 } },
      { ...spec, awsSts: { ...spec.awsSts, region: 'us-east-2' } },
      { ...spec, awsSts: { ...spec.awsSts, roleClaim: 'groups' } },
      { ...spec, awsSts: { ...spec.awsSts, roleMappings: [] } },
      {
        ...spec,
        awsSts: {
          ...spec.awsSts,
          roleMappings: [
            { claim: 'a', roleArn: 'x' },
            { claim: 'b', roleArn: 'y' },
          ],
        },
      },
    ];
    const hashes = new Set([configHash(spec), ...variants.map(configHash)]);
    assert.equal(hashes.size, variants.length + 1);
  });
});

describe('WorkQueue', () => {
  it('deduplicates waiting keys and re-queues a key added while in flight', async () => {
    const q = new WorkQueue();
    q.add('a');
    q.add('a');
    q.add('b');
    assert.equal(await q.next(), 'a');
    q.add('a'); // in flight → dirty
    assert.equal(await q.next(), 'b');
    q.done('b');
    q.done('a'); // re-queued now
    assert.equal(await q.next(), 'a');
    q.done('a');
    q.close();
    assert.equal(await q.next(), undefined);
  });
  it('backs off exponentially per key and forget() resets it', () => {
    const q = new WorkQueue({ baseDelayMs: 10, maxDelayMs: 35 });
    assert.deepEqual([q.addRateLimited('k'), q.addRateLimited('k'), q.addRateLimited('k')], [10, 20, 35]);
    q.forget('k');
    assert.equal(q.addRateLimited('k'), 10);
    q.close();
  });
});

describe('references', () => {
  const obj = (spec: unknown, status?: unknown) => ({ metadata: { name: 'w' }, spec, status }) as never;
  it('MCPServer: externalAuthConfigRef and authServerRef (only kind MCPExternalAuthConfig)', () => {
    assert.deepEqual(
      referencedConfigs(
        'MCPServer',
        obj({ externalAuthConfigRef: { name: 'a' }, authServerRef: { name: 'b' } }),
      ),
      [
        { field: 'externalAuthConfigRef', name: 'a' },
        { field: 'authServerRef', name: 'b' },
      ],
    );
    assert.deepEqual(
      referencedConfigs('MCPRemoteProxy', obj({ authServerRef: { kind: 'Other', name: 'b' } })),
      [],
    );
  });
  it('VirtualMCPServer: outgoingAuth.default and status.discoveredBackends[].authConfigRef', () => {
    const refs = referencedConfigs(
      'VirtualMCPServer',
      obj(
        { outgoingAuth: { default: { externalAuthConfigRef: { name: 'd' } } } },
        { discoveredBackends: [{ authConfigRef: 'x' }, { name: 'no-ref' }] },
      ),
    );
    assert.deepEqual(
      refs.map((r) => r.name),
      ['d', 'x'],
    );
  });
});
