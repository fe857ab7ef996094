/**
 * What the tests of the registry's signer policy and of sync's signature check share: a skills
 * service whose configured registry is a registry file (as users set it), an OCI registry
 * (Debian docker-registry on loopback), the user's Sigstore policy over the test's stand-in
 * Fulcio CA and Rekor key (`test/helpers/sigstore-fixture.ts`), and ways to publish, sign,
 * re-sign and unsign a skill.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, realpathSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { GroupService } from '../../../src/groups/index.js';
import { RegistryService } from '../../../src/registry/index.js';
import type { CatalogSkill } from '../../../src/schemas/registry/index.js';
import { registrySkillCatalog, SkillsService } from '../../../src/skills/index.js';
import { OciSession } from '../../../src/skills/oci-client.js';
import { parseOciRef } from '../../../src/skills/oci-ref.js';
import { SIGSTORE_POLICY_ENV, signatureStore } from '../../../src/skills/signing.js';
import { openStore } from '../../../src/store/index.js';
import { requireService } from '../../helpers/services.js';
import { createSigstoreFixture, type SigstoreFixture } from '../../helpers/sigstore-fixture.js';
import { hasRegistry, initGitRepo, startRegistry, tempDir, writeSkill } from './fixtures.js';

export const ALICE = 'alice@example.com';
export const ISSUER = 'https://accounts.example.com';

export interface LockEntry {
  name: string;
  source: string;
  digest: string;
  unsigned?: boolean;
  provenance?: { signerIdentity: string; certIssuer: string };
}

export interface Harness {
  skills: SkillsService;
  env: NodeJS.ProcessEnv;
  /** Points the registry service at a fresh registry file holding `entries`. */
  useRegistry(entries: CatalogSkill[]): Promise<void>;
  /** Writes the user's Sigstore policy (trusted root + identities). */
  usePolicy(identities: unknown[]): void;
  newProject(): string;
  lock(project: string): LockEntry[];
  /** Builds, pushes (signed with `key` when given) and drops the local build of `name`. */
  publish(
    name: string,
    options?: { key?: string; description?: string },
  ): Promise<{ ref: string; digest: string }>;
  sign(ref: string, digest: string, identity: string, issuer: string, options?: SignOptions): Promise<void>;
}

export interface SignOptions {
  /** Replace every signature the digest has (a tampered registry) instead of adding one. */
  replace?: boolean;
}

/**
 * Signs `digest` of `ref`'s repository keyless as `identity` from `issuer` (cosign's `.sig` tag),
 * beside its other signatures or, with `replace`, instead of them.
 */
export async function signKeyless(
  fx: SigstoreFixture,
  ref: string,
  digest: string,
  identity: string,
  issuer: string,
  { replace = false }: SignOptions = {},
): Promise<void> {
  const session = new OciSession(parseOciRef(ref), true, { privateHosts: ['127.0.0.1'] });
  const store = signatureStore(session);
  const repo = ref.slice(0, ref.lastIndexOf(':'));
  // Without the existing manifest the signer writes one holding only the new signature.
  const target = replace ? { ...store, findManifest: async () => undefined } : store;
  await fx.sign(target, repo, digest, fx.leaf({ identity, issuer }));
}

/** Deletes the signature manifest of `digest` (its `sha256-<hex>.sig` tag) from the registry. */
export async function removeSignature(ref: string, digest: string): Promise<void> {
  const { registry, repository } = parseOciRef(ref);
  const manifests = `http://${registry}/v2/${repository}/manifests`;
  const head = await fetch(`${manifests}/${digest.replace(':', '-')}.sig`, {
    method: 'HEAD',
    headers: {
      accept:
        'application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json',
    },
  });
  assert.equal(head.status, 200, 'the digest has a signature to remove');
  const sig = head.headers.get('docker-content-digest') ?? '';
  const deleted = await fetch(`${manifests}/${sig}`, { method: 'DELETE' });
  assert.equal(deleted.status, 202, await deleted.text());
}

/**
 * The harness over a fresh Sigstore fixture; undefined when the test was skipped (loudly; a
 * failure in CI) because docker-registry is missing.
 */
export async function policyHarness(t: TestContext): Promise<Harness | undefined> {
  if (!requireService(t, 'docker-registry', hasRegistry(), 'apt-get install docker-registry'))
    return undefined;
  const fx = createSigstoreFixture();
  t.after(() => fx.close());
  return harness(t, fx);
}

export async function harness(t: TestContext, fx: SigstoreFixture): Promise<Harness> {
  const registry = await startRegistry(t);
  const dir = tempDir(t, 'skep-skill-regpolicy-');
  const home = join(dir, 'home');
  mkdirSync(home);
  const store = openStore(join(dir, 'state.db'));
  t.after(() => store.close());
  const registryService = new RegistryService({ store, cacheDir: join(dir, 'cache') });
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, XDG_CONFIG_HOME: join(home, '.config') };
  const skills = new SkillsService({
    store,
    groups: new GroupService(store),
    storeDir: join(dir, 'oci'),
    env,
    privateHosts: ['127.0.0.1'],
    catalog: registrySkillCatalog(() => registryService),
  });
  let files = 0;
  return {
    skills,
    env,
    async useRegistry(entries) {
      const file = join(dir, `registry-${++files}.json`);
      writeFileSync(
        `${file}.tmp`,
        JSON.stringify({ version: '1.0.0', data: { servers: [], skills: entries } }),
      );
      renameSync(`${file}.tmp`, file);
      await registryService.configure('default', { local_path: file });
    },
    usePolicy(identities) {
      const file = join(dir, 'sigstore-policy.json');
      writeFileSync(file, JSON.stringify({ trusted_root: fx.trustedRootPath, identities }));
      env[SIGSTORE_POLICY_ENV] = file;
    },
    newProject() {
      const project = realpathSync(tempDir(t, 'skep-skill-regpolicy-project-'));
      initGitRepo(project);
      return project;
    },
    lock(project) {
      return (parseYaml(readFileSync(join(project, 'skep.lock.yaml'), 'utf8')) as { skills: LockEntry[] })
        .skills;
    },
    async publish(name, { key, description } = {}) {
      const ref = `${registry}/skills/${name}:1.0.0`;
      await skills.build(
        writeSkill(join(dir, 'src'), name, description === undefined ? {} : { description }),
        ref,
      );
      await skills.push({ reference: ref, ...(key === undefined ? {} : { key }) });
      await skills.removeBuild(ref);
      const head = await fetch(`http://${registry}/v2/skills/${name}/manifests/1.0.0`, {
        method: 'HEAD',
        headers: { accept: 'application/vnd.oci.image.index.v1+json' },
      });
      const digest = head.headers.get('docker-content-digest') ?? '';
      assert.match(digest, /^sha256:[0-9a-f]{64}$/);
      return { ref, digest };
    },
    sign: (ref, digest, identity, issuer, options) => signKeyless(fx, ref, digest, identity, issuer, options),
  };
}

export function catalogEntry(
  name: string,
  ref: string,
  provenance?: CatalogSkill['provenance'],
): CatalogSkill {
  return {
    namespace: 'io.example',
    name,
    description: `The ${name} skill.`,
    version: '1.0.0',
    packages: [{ registryType: 'oci', identifier: ref }],
    ...(provenance === undefined ? {} : { provenance }),
  };
}
