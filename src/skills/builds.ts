/**
 * Local builds: package a skill folder into the local OCI store, list and remove builds,
 * and push one to a registry (in ToolHive's artifact format). Validation of a folder is
 * `validateSkillDir` in `skill-dir.ts`.
 */
import { stat } from 'node:fs/promises';
import { SkepError } from '../shared/index.js';
import { sourceDateEpoch } from './archive.js';
import { buildArtifact, LABEL } from './artifact.js';
import type { SkillsContext } from './context.js';
import { parseOciRef } from './oci-ref.js';
import { keylessSigner, loadSigningKey, signatureModule, signatureStore } from './signing.js';
import { checkSkillPath, collectSkillFiles, parseCollected } from './skill-dir.js';

export interface BuildInfo {
  tag: string;
  digest: string;
  name: string;
  description: string;
  version: string;
}

export interface PushRequest {
  reference: string;
  key?: string | undefined;
  identity_token?: string | undefined;
  no_sign?: boolean | undefined;
}

export interface PushResult {
  /** The digest of the pushed artifact (its image index). */
  digest: string;
  /** The signing key's fingerprint, or the keyless certificate's identity, when signed. */
  signer?: string;
  /** Where the signature is stored (cosign's `sha256-<hex>.sig` tag), when signed. */
  signature?: string;
}

/** Packages the skill folder into the local store; returns the tag (or the digest when untagged). */
export async function buildSkill(
  ctx: SkillsContext,
  path: string,
  tag?: string,
): Promise<{ reference: string }> {
  checkSkillPath(path);
  try {
    if (!(await stat(path)).isDirectory())
      throw new SkepError('invalid_path', `path "${path}" is not a directory`);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT')
      throw new SkepError('invalid_path', `path "${path}" does not exist`);
    throw err;
  }
  const files = await collectSkillFiles(path);
  const parsed = parseCollected(files, path);
  const finalTag = tag === undefined || tag === '' ? parsed.frontmatter.name : tag;
  if (finalTag.includes('/') || finalTag.includes('@')) parseOciRef(finalTag);
  else if (!/^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,127}$/.test(finalTag)) {
    throw new SkepError(
      'invalid_reference',
      `invalid tag "${finalTag}": use a bare tag (letters, digits, "_", ".", "-") or a full OCI reference`,
    );
  }
  const artifact = await buildArtifact(files, parsed.frontmatter, sourceDateEpoch(ctx.env()));
  await ctx.local.save(finalTag, artifact);
  return { reference: finalTag };
}

export async function listBuilds(ctx: SkillsContext): Promise<BuildInfo[]> {
  const out: BuildInfo[] = [];
  for (const b of await ctx.local.builds()) {
    let labels: Record<string, string> = {};
    try {
      const root = JSON.parse((await ctx.local.getManifest(b.tag)).bytes.toString('utf8')) as {
        annotations?: Record<string, string>;
      };
      labels = root.annotations ?? {};
    } catch {
      // a damaged entry is still listed, without metadata
    }
    out.push({
      tag: b.tag,
      digest: b.digest,
      name: labels[LABEL.name] ?? '',
      description: labels[LABEL.description] ?? '',
      version: labels[LABEL.version] ?? '',
    });
  }
  return out;
}

export async function removeBuild(ctx: SkillsContext, tag: string): Promise<void> {
  if (!(await ctx.local.remove(tag)))
    throw new SkepError('skill_not_found', `build "${tag}" not found in local store`);
}

/** Pushes a local build to the registry named by its tag (which must be a full reference). */
export async function pushBuild(ctx: SkillsContext, request: PushRequest): Promise<PushResult> {
  const key = request.key === '' ? undefined : request.key;
  const token = request.identity_token === '' ? undefined : request.identity_token;
  if (request.no_sign === true && (key !== undefined || token !== undefined))
    throw new SkepError('bad_request', 'no_sign excludes key and identity_token');
  if (key !== undefined && token !== undefined)
    throw new SkepError('bad_request', 'key and identity_token are mutually exclusive');
  // The key is read and checked (or the keyless certificate obtained) before anything is pushed:
  // a bad key or a refused token leaves the registry untouched.
  const keyless = token === undefined ? undefined : await keylessSigner(ctx, token);
  const signingKey = key === undefined ? keyless?.key : await loadSigningKey(ctx, key);
  const digest = await ctx.local.resolve(request.reference);
  if (digest === undefined)
    throw new SkepError('skill_not_found', `reference "${request.reference}" not found in local store`);
  const ref = parseOciRef(request.reference);
  const session = ctx.session(ref, true);
  const { root, manifests, blobs } = await ctx.local.collectBlobs(request.reference);
  for (const b of blobs) await session.putBlob(await ctx.local.readBlob(b), b);
  for (const m of manifests) await session.putManifest(m.digest, m.bytes, m.mediaType);
  await session.putManifest(ref.digest ?? ref.tag ?? root.digest, root.bytes, root.mediaType);
  if (signingKey === undefined) return { digest: root.digest };
  const sig = await signatureModule();
  const signed = await sig.signArtifact(
    signatureStore(session),
    `${ref.registry}/${ref.repository}`,
    root.digest,
    signingKey,
    keyless?.annotate,
  );
  return {
    digest: root.digest,
    signer: keyless?.identity ?? signed.signer,
    signature: `${ref.registry}/${ref.repository}:${signed.tag}`,
  };
}
