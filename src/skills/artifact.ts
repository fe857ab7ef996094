/**
 * The skill OCI artifact (ToolHive's format): an image index (one manifest per platform,
 * linux/amd64 and linux/arm64) whose manifests share one config-less-in-spirit image config
 * carrying the skill labels and exactly one tar+gzip layer. The artifact type and annotation
 * names are ToolHive's, so artifacts move between the two tools unchanged.
 */
import { SkepError } from '../shared/index.js';
import { gzipDeterministic, packTar } from './archive.js';
import {
  type Manifest,
  MEDIA_CONFIG,
  MEDIA_INDEX,
  MEDIA_LAYER,
  MEDIA_MANIFEST,
  sha256Digest,
} from './oci-client.js';
import type { SkillFile } from './skill-dir.js';
import type { SkillFrontmatter } from './skill-md.js';

export const ARTIFACT_TYPE = 'dev.toolhive.skills.v1';
export const MAX_LAYER_BYTES = 50 * 1024 * 1024;
const MAX_CONFIG_BYTES = 1024 * 1024;
const PLATFORMS = [
  { architecture: 'amd64', os: 'linux' },
  { architecture: 'arm64', os: 'linux' },
] as const;

export const LABEL = {
  name: 'dev.toolhive.skills.name',
  description: 'dev.toolhive.skills.description',
  version: 'dev.toolhive.skills.version',
  allowedTools: 'dev.toolhive.skills.allowedTools',
  license: 'dev.toolhive.skills.license',
  files: 'dev.toolhive.skills.files',
  requires: 'dev.toolhive.skills.requires',
} as const;

export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  artifactType?: string;
  platform?: { architecture: string; os: string };
  annotations?: Record<string, string>;
}

export interface Blob {
  digest: string;
  mediaType: string;
  data: Buffer;
}

/** Every blob of a built artifact, root (index) last. */
export interface BuiltArtifact {
  root: Blob;
  blobs: Blob[];
}

function blob(mediaType: string, data: Buffer): Blob {
  return { mediaType, data, digest: sha256Digest(data) };
}

function json(value: unknown): Buffer {
  return Buffer.from(JSON.stringify(value));
}

/** Packages a skill reproducibly: the same files and epoch give the same index digest. */
export async function buildArtifact(
  files: readonly SkillFile[],
  fm: SkillFrontmatter,
  epoch: number,
): Promise<BuiltArtifact> {
  const tar = await packTar(files, epoch);
  const layer = blob(MEDIA_LAYER, gzipDeterministic(tar, epoch));
  const created = new Date(epoch * 1000).toISOString().replace('.000Z', 'Z');
  const annotations: Record<string, string> = {
    'org.opencontainers.image.created': created,
    [LABEL.name]: fm.name,
    [LABEL.description]: fm.description,
    [LABEL.version]: fm.version,
  };
  const requires = (fm.metadata['toolhive.requires'] ?? '')
    .split('\n')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (requires.length > 0) annotations[LABEL.requires] = JSON.stringify(requires);
  const labels = {
    [LABEL.name]: fm.name,
    [LABEL.description]: fm.description,
    [LABEL.version]: fm.version,
    [LABEL.allowedTools]: JSON.stringify(fm.allowedTools),
    [LABEL.license]: fm.license,
    [LABEL.files]: JSON.stringify(files.map((f) => f.path)),
  };
  const blobs: Blob[] = [layer];
  const manifests: Descriptor[] = [];
  for (const platform of PLATFORMS) {
    const config = blob(
      MEDIA_CONFIG,
      json({
        created,
        architecture: platform.architecture,
        os: platform.os,
        config: { Labels: labels },
        rootfs: { type: 'layers', diff_ids: [sha256Digest(tar)] },
        history: [{ created, created_by: 'skep package' }],
      }),
    );
    const manifest = blob(
      MEDIA_MANIFEST,
      json({
        schemaVersion: 2,
        mediaType: MEDIA_MANIFEST,
        artifactType: ARTIFACT_TYPE,
        config: { mediaType: MEDIA_CONFIG, digest: config.digest, size: config.data.length },
        layers: [
          {
            mediaType: MEDIA_LAYER,
            digest: layer.digest,
            size: layer.data.length,
            annotations: { 'org.opencontainers.image.title': 'skill.tar.gz' },
          },
        ],
        annotations,
      }),
    );
    blobs.push(config, manifest);
    manifests.push({
      mediaType: MEDIA_MANIFEST,
      digest: manifest.digest,
      size: manifest.data.length,
      platform: { ...platform },
    });
  }
  const root = blob(
    MEDIA_INDEX,
    json({ schemaVersion: 2, mediaType: MEDIA_INDEX, artifactType: ARTIFACT_TYPE, manifests, annotations }),
  );
  blobs.push(root);
  return { root, blobs };
}

/** Where artifact bytes come from: the local store or a registry session. */
export interface BlobSource {
  getManifest(reference: string): Promise<Manifest>;
  getBlob(digest: string, maxBytes: number): Promise<Buffer>;
}

export interface FetchedArtifact {
  /** Digest of the root (the index for artifacts built by Skep or ToolHive). */
  digest: string;
  labels: Record<string, string>;
  layer: Buffer;
}

function parseJson<T>(bytes: Buffer, what: string): T {
  try {
    return JSON.parse(bytes.toString('utf8')) as T;
  } catch {
    throw new SkepError('skill_artifact_invalid', `${what} is not valid JSON`);
  }
}

interface ManifestJson {
  mediaType?: string;
  manifests?: Descriptor[];
  config?: Descriptor;
  layers?: Descriptor[];
}

/** Reads a skill artifact: index → first manifest → config labels and layer 0 (as ToolHive reads one). */
export async function fetchArtifact(source: BlobSource, reference: string): Promise<FetchedArtifact> {
  const root = await source.getManifest(reference);
  let body = parseJson<ManifestJson>(root.bytes, 'the artifact manifest');
  if (root.mediaType === MEDIA_INDEX || Array.isArray(body.manifests)) {
    const first = body.manifests?.[0];
    if (first === undefined)
      throw new SkepError('skill_artifact_invalid', 'the artifact index lists no manifest');
    const manifest = await source.getManifest(first.digest);
    body = parseJson<ManifestJson>(manifest.bytes, 'the artifact manifest');
  }
  const layer = body.layers?.[0];
  if (layer === undefined)
    throw new SkepError('skill_artifact_invalid', 'the artifact manifest has no layer');
  if (layer.mediaType !== MEDIA_LAYER) {
    throw new SkepError(
      'skill_artifact_invalid',
      `the first layer has media type "${layer.mediaType}", expected ${MEDIA_LAYER}`,
    );
  }
  if (layer.size > MAX_LAYER_BYTES) {
    throw new SkepError(
      'skill_artifact_invalid',
      `the skill layer is ${layer.size} bytes; the limit is ${MAX_LAYER_BYTES}`,
    );
  }
  if (body.config === undefined)
    throw new SkepError('skill_artifact_invalid', 'the artifact manifest has no config');
  const config = parseJson<{ config?: { Labels?: Record<string, string> } }>(
    await source.getBlob(body.config.digest, MAX_CONFIG_BYTES),
    'the artifact config',
  );
  const labels = config.config?.Labels ?? {};
  if ((labels[LABEL.name] ?? '') === '')
    throw new SkepError('skill_artifact_invalid', `the artifact config has no ${LABEL.name} label`);
  const data = await source.getBlob(layer.digest, MAX_LAYER_BYTES);
  return { digest: root.digest, labels, layer: data };
}
