/**
 * Resolving what the user named (ToolHive's skill reference syntax) into a verified set of archive
 * entries: an OCI reference (a local build with that tag wins over the registry), a git
 * reference, a local build tag, or a skill name matching one local build. Nothing is written
 * here; `install.ts` writes only what resolved and passed every check.
 */
import { stat } from 'node:fs/promises';
import { SkepError } from '../shared/index.js';
import { type ArchiveEntry, readSkillArchive } from './archive.js';
import { type FetchedArtifact, fetchArtifact, LABEL } from './artifact.js';
import { listBuilds } from './builds.js';
import type { SkillsContext } from './context.js';
import { checkoutGitSkill, isGitRef, parseGitRef } from './git-source.js';
import { formatOciRef, looksLikeOciRef, type OciRef, parseOciRef, repositoryName } from './oci-ref.js';
import {
  catalogSource,
  entryName,
  findCatalogSkill,
  policiesForRepository,
  type RegistryPolicy,
  registryPolicyOf,
} from './registry-policy.js';
import { collectSkillFiles, parseCollected } from './skill-dir.js';
import { type ParsedSkill, requireSkillName, skillNameProblem } from './skill-md.js';
import type { CatalogSkill } from '../schemas/registry/index.js';

export interface SkillContent {
  name: string;
  description: string;
  version: string;
  license: string;
  body: string;
  files: { path: string; size: number }[];
}

/** A source resolved and verified, ready to be written. */
export interface ResolvedSkill {
  name: string;
  reference: string;
  tag: string;
  digest: string;
  parsed: ParsedSkill;
  entries: ArchiveEntry[];
  /** The registry repository the artifact came from (not for git sources or local builds): where its signature is. */
  oci?: OciRef;
  /** The signers the registry's entries require of this skill (`registry-policy.ts`); none when absent. */
  registryPolicies?: RegistryPolicy[];
}

/** A qualified registry skill name, `namespace/name` (ToolHive's), which also reads as an OCI reference. */
const QUALIFIED_NAME = /^[a-z0-9][a-z0-9.-]*\/[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;

/**
 * Installs what a registry entry publishes, under the entry's signer policy (checked before
 * anything is fetched: a policy Skep cannot enforce refuses the install). The skill must be the
 * one the entry names.
 */
async function fromCatalog(
  ctx: SkillsContext,
  entry: CatalogSkill,
  version: string | undefined,
): Promise<ResolvedSkill> {
  const own = registryPolicyOf(entry);
  const resolved = await resolveSkill(ctx, catalogSource(entry), version);
  if (resolved.name !== entry.name) {
    throw new SkepError(
      'skill_artifact_invalid',
      `registry skill ${entryName(entry)} resolves to a skill named "${resolved.name}"`,
    );
  }
  const policies = [...(resolved.registryPolicies ?? [])];
  if (own !== undefined && !policies.some((p) => p.entry === own.entry)) policies.push(own);
  return policies.length === 0 ? resolved : { ...resolved, registryPolicies: policies };
}

async function fromArtifact(
  ctx: SkillsContext,
  fetched: FetchedArtifact,
  reference: string,
  tag: string,
  where: string,
): Promise<ResolvedSkill> {
  const entries = await readSkillArchive(fetched.layer, ctx.limits);
  const parsed = parseCollected(entries, where);
  if (parsed.frontmatter.name !== fetched.labels[LABEL.name]) {
    throw new SkepError(
      'skill_artifact_invalid',
      `skill name "${parsed.frontmatter.name}" in SKILL.md does not match the artifact label "${fetched.labels[LABEL.name]}"`,
    );
  }
  return { name: parsed.frontmatter.name, reference, tag, digest: fetched.digest, parsed, entries };
}

async function fromGit(ctx: SkillsContext, input: string): Promise<ResolvedSkill> {
  const git = ctx.git();
  const ref = parseGitRef(input);
  const checkout = await checkoutGitSkill(ref, git, ctx.env());
  try {
    try {
      if (!(await stat(checkout.dir)).isDirectory()) throw new Error('not a directory');
    } catch {
      throw new SkepError('skill_not_found', `path "${ref.path}" not found in ${input}`);
    }
    const files = await collectSkillFiles(checkout.dir);
    const parsed = parseCollected(files, input);
    const entries = files.map((f) => ({ path: f.path, mode: 0o644, data: f.data }));
    return {
      name: parsed.frontmatter.name,
      reference: input,
      tag: ref.ref ?? '',
      digest: checkout.commit,
      parsed,
      entries,
    };
  } finally {
    await checkout.dispose();
  }
}

/**
 * Resolves what the user asked for (ToolHive's dispatch): a git reference, a registry entry's
 * `namespace/name`, an OCI reference (with the signer policies of the registry entries that
 * publish its repository), a local build, or a skill name — a local build first, then the
 * configured registry.
 */
export async function resolveSkill(
  ctx: SkillsContext,
  input: string,
  version?: string,
): Promise<ResolvedSkill> {
  if (input === '') throw new SkepError('bad_request', 'name is required');
  if (isGitRef(input)) return fromGit(ctx, input);
  if (QUALIFIED_NAME.test(input)) {
    const entry = await findCatalogSkill(ctx, input);
    if (entry !== undefined) return fromCatalog(ctx, entry, version);
  }
  if (looksLikeOciRef(input)) {
    let reference = input;
    if (
      version !== undefined &&
      version !== '' &&
      input.includes('/') &&
      !input.includes(':') &&
      !input.includes('@')
    ) {
      reference = `${input}:${version}`;
    }
    const ref = parseOciRef(reference);
    // A local build tagged with this exact reference wins over the registry.
    const local = (await ctx.local.resolve(reference)) !== undefined;
    const fetched = local
      ? await fetchArtifact(ctx.local, reference)
      : await fetchArtifact(ctx.session(ref, false), ref.digest ?? ref.tag ?? 'latest');
    // Supply-chain check (ToolHive's too): the artifact's name is the repository's last segment.
    const declared = fetched.labels[LABEL.name] ?? '';
    if (skillNameProblem(declared) !== undefined || declared !== repositoryName(ref)) {
      throw new SkepError(
        'skill_artifact_invalid',
        `skill name "${declared}" in artifact does not match OCI reference repository "${ref.repository}"`,
      );
    }
    const policies = await policiesForRepository(ctx, ref);
    const governed = policies.length === 0 ? {} : { registryPolicies: policies };
    if (local) return { ...(await fromArtifact(ctx, fetched, reference, reference, reference)), ...governed };
    return {
      ...(await fromArtifact(ctx, fetched, reference, ref.tag ?? '', formatOciRef(ref))),
      oci: ref,
      ...governed,
    };
  }
  requireSkillName(input);
  if ((await ctx.local.resolve(input)) !== undefined) {
    const fetched = await fetchArtifact(ctx.local, input);
    if (fetched.labels[LABEL.name] !== input) {
      throw new SkepError(
        'skill_artifact_invalid',
        `local build "${input}" declares the skill name "${fetched.labels[LABEL.name]}"`,
      );
    }
    return fromArtifact(ctx, fetched, input, input, input);
  }
  const matches = (await listBuilds(ctx)).filter(
    (b) =>
      b.name === input &&
      (version === undefined || version === '' || b.version === version || b.tag === version),
  );
  const chosen = matches.length === 1 ? matches[0] : matches.find((m) => m.tag === input);
  if (chosen === undefined && matches.length > 1) {
    throw new SkepError(
      'conflict',
      `multiple local builds match skill "${input}"; specify version or install by tag: ${matches.map((m) => m.tag).join(', ')}`,
    );
  }
  if (chosen === undefined) {
    const entry = await findCatalogSkill(ctx, input);
    if (entry !== undefined) return fromCatalog(ctx, entry, version);
    throw new SkepError(
      'skill_not_found',
      `skill "${input}" not found in local store${ctx.catalog === undefined ? '' : ' or registry'}; install by OCI reference (e.g. ghcr.io/<namespace>/${input}:<version>) or git:// reference`,
    );
  }
  return fromArtifact(ctx, await fetchArtifact(ctx.local, chosen.tag), chosen.tag, chosen.tag, chosen.tag);
}

/** `GET /skills/content?ref=`: the skill's metadata, SKILL.md body and file list, without installing. */
export async function skillContent(ctx: SkillsContext, ref: string | undefined): Promise<SkillContent> {
  if (ref === undefined || ref.trim() === '')
    throw new SkepError('bad_request', 'ref query parameter is required');
  let input = ref.trim();
  if (/^https?:\/\//.test(input)) {
    let url: URL;
    try {
      url = new URL(input);
    } catch {
      throw new SkepError('invalid_reference', `invalid URL "${input}"`);
    }
    input = `git://${url.host}${url.pathname.replace(/\.git$/, '')}${url.hash}`;
  }
  const resolved = await resolveSkill(ctx, input);
  const fm = resolved.parsed.frontmatter;
  return {
    name: fm.name,
    description: fm.description,
    version: fm.version,
    license: fm.license,
    body: resolved.parsed.body,
    files: resolved.entries.map((e) => ({ path: e.path, size: e.data.length })),
  };
}
