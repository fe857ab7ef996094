/**
 * The registry's policy for a skill: a catalog skill entry may say who signs it, in a top-level
 * `provenance` object (ToolHive's skill entries carry it there, in the shape of an image server's
 * provenance: `signer_identity`, `cert_issuer`, `repository_uri`; Skep adds
 * `signer_identity_regexp`). An install that comes from such an entry — by name through the
 * configured registry, or by an OCI reference in the repository of one of the entry's `oci`
 * packages — must carry a keyless signature by that signer.
 *
 * The entry narrows the user's policy and never widens it: the signature must also pass the
 * user's own keyless identities, and it is checked against the trusted root of the user's Sigstore
 * policy — a registry cannot supply a root (or a key) of its own. An entry with provenance and an
 * unsigned artifact is refused even with `allow_unsigned`: the registry said it is signed. Like
 * ToolHive, a constraint Skep cannot check (`sigstore_url`, `attestation`, `repository_ref`,
 * `runner_environment`, and `public_key`, which ToolHive's skill entries do not have) refuses the
 * install by name instead of being skipped.
 */
import type { CatalogSkill } from '../schemas/registry/index.js';
import { isSkepError, SkepError } from '../shared/index.js';
import type { SkillsContext } from './context.js';
import { type OciRef, parseOciRef } from './oci-ref.js';
import {
  checkSignature,
  type KeylessCheck,
  type KeylessResult,
  SIGSTORE_POLICY_ENV,
  type SkillTrust,
} from './signing.js';

/** The configured registry's skill entries, as the skills domain reads them. */
export interface SkillCatalog {
  listSkills(): Promise<readonly CatalogSkill[]>;
}

/** What a registry service offers to page through its skills (the catalog view). */
export interface CatalogSkillPages {
  listCatalogSkills(query: { page: number; limit: number }): Promise<{
    items: CatalogSkill[];
    metadata: { total: number };
  }>;
}

/** The catalog view's largest page. */
const PAGE_SIZE = 200;

/**
 * A `SkillCatalog` over a registry service's catalog pages (read at call time). A registry that
 * cannot be read fails with its own error code (503 `unavailable` when its source cannot be
 * read), and the message says why a skill install needed it.
 */
export function registrySkillCatalog(registry: () => CatalogSkillPages): SkillCatalog {
  const read = async (): Promise<CatalogSkill[]> => {
    const all: CatalogSkill[] = [];
    for (let page = 1; ; page++) {
      const { items, metadata } = await registry().listCatalogSkills({ page, limit: PAGE_SIZE });
      all.push(...items);
      if (items.length === 0 || all.length >= metadata.total) return all;
    }
  };
  return {
    listSkills: () =>
      read().catch((err: unknown) => {
        if (!isSkepError(err)) throw err;
        throw new SkepError(
          err.code,
          `the configured registry's skill entries cannot be read, and an install must meet the signer policy they may hold: ${err.message}`,
          { cause: err, ...(err.details === undefined ? {} : { details: err.details }) },
        );
      }),
  };
}

/** The keyless identity a registry entry requires (cosign's `--certificate-identity[-regexp]`, issuer). */
export interface RegistryIdentity {
  signerIdentity?: string;
  signerIdentityRegexp?: string;
  certIssuer: string;
  repositoryUri?: string;
}

/** One registry entry's signer requirement. */
export interface RegistryPolicy {
  /** `namespace/name` of the entry, for messages. */
  entry: string;
  identity: RegistryIdentity;
}

const UNCHECKED_FIELDS = [
  'public_key',
  'sigstore_url',
  'attestation',
  'repository_ref',
  'runner_environment',
] as const;

export function entryName(skill: CatalogSkill): string {
  return `${skill.namespace}/${skill.name}`;
}

/**
 * The entry's signer requirement, or undefined when it states none (no `provenance`, or one with
 * no field set: most entries have none, and that must not break their installs).
 */
export function registryPolicyOf(skill: CatalogSkill): RegistryPolicy | undefined {
  const p = skill.provenance;
  if (p === undefined || Object.values(p).every((v) => v === undefined || v === '')) return undefined;
  const entry = entryName(skill);
  const refuse = (why: string) =>
    new SkepError('forbidden', `registry skill ${entry}: provenance.${why}; the install is refused`);
  for (const field of UNCHECKED_FIELDS) {
    if (p[field] !== undefined && p[field] !== '')
      throw refuse(
        field === 'public_key'
          ? "public_key is not honoured for skills (a registry cannot supply a key: trust the publisher's key yourself, with --key or in trusted-keys); only keyless signers (signer_identity, cert_issuer) are"
          : `${field} is a constraint Skep cannot check for skills, and it is not skipped`,
      );
  }
  const identity = p.signer_identity === '' ? undefined : p.signer_identity;
  const regexp = p.signer_identity_regexp === '' ? undefined : p.signer_identity_regexp;
  if ((identity === undefined) === (regexp === undefined))
    throw refuse('give exactly one of signer_identity and signer_identity_regexp');
  if (regexp !== undefined) {
    try {
      new RegExp(regexp, 'u');
    } catch (err) {
      throw refuse(`signer_identity_regexp: ${(err as Error).message}`);
    }
  }
  if (p.cert_issuer === undefined || p.cert_issuer === '')
    throw refuse('cert_issuer is required with a signer identity');
  return {
    entry,
    identity: {
      certIssuer: p.cert_issuer,
      ...(identity === undefined ? {} : { signerIdentity: identity }),
      ...(regexp === undefined ? {} : { signerIdentityRegexp: regexp }),
      ...(p.repository_uri === undefined || p.repository_uri === ''
        ? {}
        : { repositoryUri: p.repository_uri }),
    },
  };
}

/** The signer a policy names, for messages: `alice@example.com (issuer https://…)`. */
export function describeIdentity(identity: RegistryIdentity): string {
  const who =
    identity.signerIdentity !== undefined
      ? identity.signerIdentity
      : `an identity matching /${identity.signerIdentityRegexp ?? ''}/`;
  const repo = identity.repositoryUri === undefined ? '' : `, repository ${identity.repositoryUri}`;
  return `${who} (issuer ${identity.certIssuer}${repo})`;
}

/**
 * The entry a plain skill name (`my-skill`) or a qualified one (`io.github.acme/my-skill`) names in
 * the registry, as ToolHive resolves it: an exact name (and namespace, when given); several
 * entries with that name are a 409 listing them.
 */
export async function findCatalogSkill(ctx: SkillsContext, name: string): Promise<CatalogSkill | undefined> {
  if (ctx.catalog === undefined) return undefined;
  const slash = name.lastIndexOf('/');
  const namespace = slash === -1 ? undefined : name.slice(0, slash);
  const short = name.slice(slash + 1);
  const matches = (await ctx.catalog.listSkills()).filter(
    (s) => s.name === short && (namespace === undefined || s.namespace === namespace),
  );
  if (matches.length > 1) {
    throw new SkepError(
      'conflict',
      `skill name "${name}" matches several registry entries: ${matches.map(entryName).join(', ')}; install by namespace/name or by OCI reference`,
    );
  }
  return matches[0];
}

/** What installs a registry entry, as a skill reference: its OCI package first, else its git one. */
export function catalogSource(skill: CatalogSkill): string {
  const packages = skill.packages ?? [];
  const oci = packages.find((p) => p.registryType === 'oci' && (p.identifier ?? '') !== '');
  if (oci !== undefined) {
    const id = oci.identifier!;
    // A package pinned to a digest is installed at that digest.
    return oci.digest !== undefined && oci.digest !== '' && !id.includes('@') ? `${id}@${oci.digest}` : id;
  }
  const git = packages.find((p) => p.registryType === 'git' && (p.url ?? '') !== '');
  if (git !== undefined) {
    const url = git.url!.replace(/^https?:\/\//, 'git://').replace(/\.git$/, '');
    if (!url.startsWith('git://')) {
      throw new SkepError(
        'invalid_reference',
        `registry skill ${entryName(skill)}: git package url "${git.url}" is not https:// or git://`,
      );
    }
    const ref = git.commit ?? git.ref;
    return `${url}${ref === undefined || ref === '' ? '' : `@${ref}`}${git.subfolder === undefined || git.subfolder === '' ? '' : `#${git.subfolder}`}`;
  }
  throw new SkepError(
    'skill_not_found',
    `registry skill ${entryName(skill)} has no installable package (an oci identifier or a git url)`,
  );
}

const sameRepository = (a: OciRef, b: OciRef) => a.registry === b.registry && a.repository === b.repository;

/**
 * The policies of the registry entries that publish `ref`'s repository (any tag or digest of it:
 * the entry says who signs the repository's skill). An identifier that does not parse is not a
 * match. A catalog that cannot be read fails the install: skipping it would skip its policy.
 */
export async function policiesForRepository(ctx: SkillsContext, ref: OciRef): Promise<RegistryPolicy[]> {
  if (ctx.catalog === undefined) return [];
  const policies: RegistryPolicy[] = [];
  for (const skill of await ctx.catalog.listSkills()) {
    const published = (skill.packages ?? []).some((p) => {
      if (p.registryType !== 'oci' || p.identifier === undefined) return false;
      try {
        return sameRepository(parseOciRef(p.identifier), ref);
      } catch {
        return false;
      }
    });
    if (!published) continue;
    const policy = registryPolicyOf(skill);
    if (policy !== undefined) policies.push(policy);
  }
  return policies;
}

/**
 * The user's keyless check narrowed by the registry's: a signature passes when it passes the
 * user's policy and then every registry policy (each one checked against the user's trusted
 * root by `registry`). The refusal names the signer found and the one expected.
 */
export function narrowKeyless(
  user: KeylessCheck,
  registry: readonly { policy: RegistryPolicy; check: KeylessCheck }[],
): KeylessCheck {
  const both = (mine: KeylessResult, theirs: (check: KeylessCheck) => KeylessResult): KeylessResult => {
    if (!mine.ok) return mine;
    for (const { policy, check } of registry) {
      if (!theirs(check).ok) {
        return {
          ok: false,
          reason: `signed by ${mine.signer.identity} (issuer ${mine.signer.issuer}), but the registry entry ${policy.entry} requires ${describeIdentity(policy.identity)}`,
        };
      }
    }
    return mine;
  };
  return {
    layer: (payload, signature, annotations) =>
      both(user.layer(payload, signature, annotations), (c) => c.layer(payload, signature, annotations)),
    bundle: (json, digest) => both(user.bundle(json, digest), (c) => c.bundle(json, digest)),
  };
}

/**
 * The signature check of a skill that registry entries govern: keyless only, against the
 * trusted root of the user's Sigstore policy, through the user's identities and then each
 * entry's. Returns the verified signer; anything else is a 403 naming the signer expected and,
 * where it can be told, the one found.
 */
export async function checkRegistrySignature(
  ctx: SkillsContext,
  resolved: { name: string; digest: string; oci?: OciRef | undefined },
  policies: readonly RegistryPolicy[],
  trust: SkillTrust,
): Promise<{ status: 'verified'; signer: string; issuer: string }> {
  const expected = policies
    .map((p) => `${describeIdentity(p.identity)}, as its registry entry ${p.entry} requires`)
    .join('; and by ');
  const subject = `skill "${resolved.name}" (${resolved.digest})`;
  const refuse = (why: string) => new SkepError('forbidden', `${subject} ${why}`);
  if (resolved.oci === undefined)
    throw refuse(
      `comes from a git source or a local build, which carries no signature; it must be signed by ${expected}`,
    );
  if (trust.keyless === undefined || trust.root === undefined)
    throw refuse(
      `must be signed keyless by ${expected}; that is checked against the trusted root of your Sigstore policy (sigstore-policy.json in the config folder, or ${SIGSTORE_POLICY_ENV}), and there is none`,
    );
  const sigstore = await import('../protocol/sigstore-verify.js');
  const root = trust.root;
  const registry = policies.map((policy) => ({
    policy,
    check: sigstore.keylessCheck(root, [policy.identity]),
  }));
  const found = await checkSignature(ctx, resolved.oci, resolved.digest, {
    keys: [],
    keyless: narrowKeyless(trust.keyless, registry),
  });
  if (found.status === 'verified') return found;
  if (found.status === 'unsigned')
    throw refuse(
      `is not signed, but must be signed by ${expected} (allow_unsigned does not apply: the registry says it is signed)`,
    );
  // A signature by a key the user trusts is not what the registry asked for: say so, not "invalid".
  if (trust.keys.length > 0) {
    const byKey = await checkSignature(ctx, resolved.oci, resolved.digest, { keys: trust.keys });
    if (byKey.status === 'verified')
      throw refuse(
        `is signed with the public key ${byKey.signer}, but must be signed keyless by ${expected}`,
      );
  }
  throw refuse(`is not signed by ${expected}: ${found.reason}`);
}
