/**
 * `skep skill sync` checks the signature of what it reinstalls, against a real OCI registry
 * (Debian docker-registry on loopback) and keyless signatures made by the test's stand-in Fulcio
 * CA and Rekor key (`test/helpers/sigstore-fixture.ts`). The pinned digest fixes the content; the
 * signature beside it can still be replaced or removed in the registry afterwards, and the
 * registry's entry can name a signer after the install.
 *
 * Checked: a lock entry that records a signer is restored only when that signer (and issuer)
 * still signs the digest — re-signed by another identity is `signer-mismatch`, by the same
 * identity from another issuer `provenance-field-mismatch`, a removed signature
 * `unsigned-rejected` even with allow_unsigned — and a refused entry leaves the lock file and the
 * folders as they were; an `unsigned: true` entry is restored unsigned; a registry entry that
 * names the signer is met on sync as on install (`signature-invalid` naming it otherwise); an
 * entry that records neither needs allow_unsigned when the content is unsigned.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import type { SyncResult } from '../../../src/skills/index.js';
import {
  ALICE,
  catalogEntry,
  type Harness,
  ISSUER,
  policyHarness,
  removeSignature,
} from './policy-harness.js';

const BOB = 'bob@example.com';
const OTHER_ISSUER = 'https://other.example.com';

/** The sync of one project for Claude Code, with the skill's folder removed first (so it is reinstalled). */
function syncer(h: Harness, project: string, name: string) {
  const folder = join(project, '.claude', 'skills', name);
  const lockFile = join(project, 'skep.lock.yaml');
  return {
    folder,
    lockText: () => readFileSync(lockFile, 'utf8'),
    writeLock: (text: string) => writeFileSync(lockFile, text),
    async sync(extra: { allow_unsigned?: boolean } = {}): Promise<SyncResult> {
      rmSync(folder, { recursive: true, force: true });
      return h.skills.sync({ project_root: project, clients: ['claude-code'], ...extra });
    },
  };
}

/** Asserts that the sync refused `name` for `reason` with a message matching `message`, writing nothing. */
function assertRefused(
  result: SyncResult,
  name: string,
  reason: string,
  message: RegExp,
  untouched: { folder: string; lockBefore: string; lockNow: string },
): void {
  assert.deepEqual(result.installed, [], JSON.stringify(result));
  assert.equal(result.failed.length, 1, JSON.stringify(result));
  assert.equal(result.failed[0]?.name, name);
  assert.equal(result.failed[0]?.reason, reason, result.failed[0]?.error);
  assert.match(result.failed[0]?.error ?? '', message);
  assert.equal(untouched.lockNow, untouched.lockBefore, 'the lock file is untouched');
  assert.ok(!existsSync(untouched.folder), 'nothing written');
}

test(
  'sync: the signer the lock records is checked again; re-signed by another identity or issuer, or unsigned, is refused',
  { timeout: 120_000 },
  async (t) => {
    const h = await policyHarness(t);
    if (h === undefined) return;
    // The user trusts any example.com identity from either issuer: only the lock tells them apart.
    h.usePolicy([
      { signer_identity_regexp: '.*@example\\.com', cert_issuer: ISSUER },
      { signer_identity_regexp: '.*@example\\.com', cert_issuer: OTHER_ISSUER },
    ]);
    const { ref, digest } = await h.publish('synced-skill');
    await h.sign(ref, digest, ALICE, ISSUER);
    const project = h.newProject();
    await h.skills.install({
      name: ref,
      scope: 'project',
      project_root: project,
      clients: ['claude-code'],
    });
    assert.deepEqual(h.lock(project)[0]?.provenance, { signerIdentity: ALICE, certIssuer: ISSUER });
    const s = syncer(h, project, 'synced-skill');
    const lockBefore = s.lockText();
    const refused = async (result: Promise<SyncResult>, reason: string, message: RegExp) =>
      assertRefused(await result, 'synced-skill', reason, message, {
        folder: s.folder,
        lockBefore,
        lockNow: s.lockText(),
      });

    // Still signed by Alice: restored, the lock as it was.
    const restored = await s.sync();
    assert.deepEqual(restored.installed, ['synced-skill'], JSON.stringify(restored));
    assert.deepEqual(restored.failed, []);
    assert.ok(existsSync(join(s.folder, 'SKILL.md')));
    assert.equal(s.lockText(), lockBefore);

    // The registry's signature is replaced by Bob's (whom the user trusts too): the lock pins Alice.
    await h.sign(ref, digest, BOB, ISSUER, { replace: true });
    await refused(
      s.sync(),
      'signer-mismatch',
      /skill "synced-skill" \(sha256:[0-9a-f]{64}\) is signed by bob@example\.com \(issuer https:\/\/accounts\.example\.com\), but skep\.lock\.yaml pins the signer alice@example\.com \(issuer https:\/\/accounts\.example\.com\)/,
    );

    // Alice's identity from another issuer: the identity matches, the recorded issuer does not.
    await h.sign(ref, digest, ALICE, OTHER_ISSUER, { replace: true });
    await refused(
      s.sync(),
      'provenance-field-mismatch',
      /is signed by alice@example\.com from the issuer https:\/\/other\.example\.com, but skep\.lock\.yaml pins the issuer https:\/\/accounts\.example\.com/,
    );

    // The signature is removed: refused, even with allow_unsigned (the lock pins a signer).
    await removeSignature(ref, digest);
    for (const extra of [{}, { allow_unsigned: true }]) {
      await refused(
        s.sync(extra),
        'unsigned-rejected',
        /skill "synced-skill" \(sha256:[0-9a-f]{64}\) is not signed, and skep\.lock\.yaml pins the signer alice@example\.com/,
      );
    }

    // Alice signs it again: restored.
    await h.sign(ref, digest, ALICE, ISSUER);
    assert.deepEqual((await s.sync()).installed, ['synced-skill']);
    assert.equal(s.lockText(), lockBefore);
  },
);

test(
  'sync: a registry entry naming the signer holds on sync; unsigned: true is restored unsigned; no record needs allow_unsigned',
  { timeout: 120_000 },
  async (t) => {
    const h = await policyHarness(t);
    if (h === undefined) return;
    h.usePolicy([{ signer_identity: ALICE, cert_issuer: ISSUER }]);
    const { ref, digest } = await h.publish('open-skill');
    await h.useRegistry([catalogEntry('open-skill', ref)]);
    const project = h.newProject();
    await h.skills.install({
      name: 'open-skill',
      scope: 'project',
      project_root: project,
      clients: ['claude-code'],
      allow_unsigned: true,
    });
    assert.equal(h.lock(project)[0]?.unsigned, true);
    const s = syncer(h, project, 'open-skill');
    const lockBefore = s.lockText();
    const refused = async (result: Promise<SyncResult>, reason: string, message: RegExp) =>
      assertRefused(await result, 'open-skill', reason, message, {
        folder: s.folder,
        lockBefore,
        lockNow: s.lockText(),
      });

    // `unsigned: true` keeps its meaning: restored without a signature.
    assert.deepEqual((await s.sync()).installed, ['open-skill']);

    // The registry's entry now names Alice as the signer: the unsigned content is refused.
    await h.useRegistry([catalogEntry('open-skill', ref, { signer_identity: ALICE, cert_issuer: ISSUER })]);
    await refused(
      s.sync({ allow_unsigned: true }),
      'signature-invalid',
      /skill "open-skill" \(sha256:[0-9a-f]{64}\) is not signed, but must be signed by alice@example\.com \(issuer https:\/\/accounts\.example\.com\), as its registry entry io\.example\/open-skill requires/,
    );

    // Alice signs the digest: the entry is met, and the lock stays as it was.
    await h.sign(ref, digest, ALICE, ISSUER);
    assert.deepEqual((await s.sync()).installed, ['open-skill']);
    assert.equal(s.lockText(), lockBefore);

    // The entry names Bob instead: Alice's signature does not meet it.
    await h.useRegistry([catalogEntry('open-skill', ref, { signer_identity: BOB, cert_issuer: ISSUER })]);
    await refused(
      s.sync(),
      'signature-invalid',
      /signed by alice@example\.com \(issuer https:\/\/accounts\.example\.com\), but the registry entry io\.example\/open-skill requires bob@example\.com/,
    );

    // A lock entry that records neither a signer nor `unsigned` (written by hand or another tool):
    // unsigned content needs allow_unsigned, as a project install does.
    await h.useRegistry([catalogEntry('open-skill', ref)]);
    await removeSignature(ref, digest);
    const lock = parseYaml(lockBefore) as { skills: Record<string, unknown>[] };
    delete lock.skills[0]?.['unsigned'];
    s.writeLock(stringifyYaml(lock));
    const bare = s.lockText();
    const refusedBare = await s.sync();
    assertRefused(
      refusedBare,
      'open-skill',
      'unsigned-rejected',
      /is not signed, and its skep\.lock\.yaml entry records neither a signer nor unsigned: true; pass allow_unsigned/,
      { folder: s.folder, lockBefore: bare, lockNow: s.lockText() },
    );
    assert.deepEqual((await s.sync({ allow_unsigned: true })).installed, ['open-skill']);
  },
);
