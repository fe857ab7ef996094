/**
 * The local build store: an OCI Image Layout (`oci-layout`, `index.json`, `blobs/sha256/…`)
 * in the data dir. Builds are tagged in `index.json` with the standard ref-name annotation
 * plus a local-build marker, which is what `GET /skills/builds` lists. Blobs are written
 * atomically and verified on read; removing a tag collects blobs no other tag uses.
 */
import { mkdir, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { SkepError, writeFileAtomic } from '../shared/index.js';
import {
  ARTIFACT_TYPE,
  type Blob,
  type BlobSource,
  type BuiltArtifact,
  type Descriptor,
} from './artifact.js';
import { type Manifest, MEDIA_INDEX, sha256Digest } from './oci-client.js';

const REF_NAME = 'org.opencontainers.image.ref.name';
const LOCAL_BUILD = 'dev.skep.local-build';

interface LayoutIndex {
  schemaVersion: 2;
  mediaType: string;
  manifests: Descriptor[];
}

export interface LocalBuild {
  tag: string;
  digest: string;
}

export class LocalStore implements BlobSource {
  readonly #root: string;

  constructor(root: string) {
    this.#root = root;
  }

  #blobPath(digest: string): string {
    const hex = digest.replace(/^sha256:/, '');
    if (!/^[a-f0-9]{64}$/.test(hex)) throw new SkepError('invalid_reference', `invalid digest "${digest}"`);
    return join(this.#root, 'blobs', 'sha256', hex);
  }

  async #readIndex(): Promise<LayoutIndex> {
    try {
      return JSON.parse(await readFile(join(this.#root, 'index.json'), 'utf8')) as LayoutIndex;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT')
        return { schemaVersion: 2, mediaType: MEDIA_INDEX, manifests: [] };
      throw err;
    }
  }

  async #writeIndex(index: LayoutIndex): Promise<void> {
    await mkdir(this.#root, { recursive: true, mode: 0o700 });
    await writeFileAtomic(
      join(this.#root, 'oci-layout'),
      JSON.stringify({ imageLayoutVersion: '1.0.0' }),
      0o644,
    );
    await writeFileAtomic(join(this.#root, 'index.json'), JSON.stringify(index), 0o644);
  }

  async #putBlob(b: Blob): Promise<void> {
    await writeFileAtomic(this.#blobPath(b.digest), b.data, 0o644);
  }

  /** Stores every blob of `artifact` and points `tag` at its root (replacing an older tag). */
  async save(tag: string, artifact: BuiltArtifact): Promise<void> {
    for (const b of artifact.blobs) await this.#putBlob(b);
    const index = await this.#readIndex();
    const previous = index.manifests.find((m) => m.annotations?.[REF_NAME] === tag);
    index.manifests = index.manifests.filter((m) => m.annotations?.[REF_NAME] !== tag);
    index.manifests.push({
      mediaType: artifact.root.mediaType,
      digest: artifact.root.digest,
      size: artifact.root.data.length,
      artifactType: ARTIFACT_TYPE,
      annotations: { [REF_NAME]: tag, [LOCAL_BUILD]: 'true' },
    });
    index.manifests.sort((a, b) =>
      (a.annotations?.[REF_NAME] ?? '').localeCompare(b.annotations?.[REF_NAME] ?? ''),
    );
    await this.#writeIndex(index);
    if (previous !== undefined && previous.digest !== artifact.root.digest) await this.#collect(index);
  }

  /** The digest a tag points at, or undefined. */
  async resolve(tag: string): Promise<string | undefined> {
    const index = await this.#readIndex();
    return index.manifests.find((m) => m.annotations?.[REF_NAME] === tag)?.digest;
  }

  async builds(): Promise<LocalBuild[]> {
    const index = await this.#readIndex();
    return index.manifests
      .filter((m) => m.annotations?.[LOCAL_BUILD] === 'true' && m.artifactType === ARTIFACT_TYPE)
      .map((m) => ({ tag: m.annotations?.[REF_NAME] ?? '', digest: m.digest }));
  }

  async remove(tag: string): Promise<boolean> {
    const index = await this.#readIndex();
    const before = index.manifests.length;
    index.manifests = index.manifests.filter((m) => m.annotations?.[REF_NAME] !== tag);
    if (index.manifests.length === before) return false;
    await this.#writeIndex(index);
    await this.#collect(index);
    return true;
  }

  async readBlob(digest: string): Promise<Buffer> {
    let data: Buffer;
    try {
      data = await readFile(this.#blobPath(digest));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT')
        throw new SkepError('not_found', `blob ${digest} is missing from the local store`);
      throw err;
    }
    if (sha256Digest(data) !== digest)
      throw new SkepError('skill_artifact_invalid', `local blob ${digest} is corrupt (digest mismatch)`);
    return data;
  }

  async getManifest(reference: string): Promise<Manifest> {
    const index = await this.#readIndex();
    const entry = reference.startsWith('sha256:')
      ? { digest: reference, mediaType: '' }
      : index.manifests.find((m) => m.annotations?.[REF_NAME] === reference);
    if (entry === undefined)
      throw new SkepError('not_found', `reference "${reference}" not found in local store`);
    const bytes = await this.readBlob(entry.digest);
    const mediaType =
      entry.mediaType !== ''
        ? entry.mediaType
        : ((JSON.parse(bytes.toString('utf8')) as { mediaType?: string }).mediaType ?? '');
    return { digest: entry.digest, mediaType, bytes };
  }

  async getBlob(digest: string, maxBytes: number): Promise<Buffer> {
    const data = await this.readBlob(digest);
    if (data.length > maxBytes)
      throw new SkepError('skill_artifact_invalid', `blob ${digest} is larger than ${maxBytes} bytes`);
    return data;
  }

  /** Every blob (digest and bytes) reachable from a tag: config and layers, manifests, then the root. */
  async collectBlobs(tag: string): Promise<{ root: Manifest; manifests: Manifest[]; blobs: string[] }> {
    const root = await this.getManifest(tag);
    const body = JSON.parse(root.bytes.toString('utf8')) as {
      manifests?: Descriptor[];
      config?: Descriptor;
      layers?: Descriptor[];
    };
    const manifests: Manifest[] = [];
    const blobs = new Set<string>();
    const visit = (m: { config?: Descriptor; layers?: Descriptor[] }) => {
      if (m.config !== undefined) blobs.add(m.config.digest);
      for (const l of m.layers ?? []) blobs.add(l.digest);
    };
    if (Array.isArray(body.manifests)) {
      for (const d of body.manifests) {
        const m = await this.getManifest(d.digest);
        manifests.push({ ...m, mediaType: d.mediaType });
        visit(JSON.parse(m.bytes.toString('utf8')));
      }
    } else visit(body);
    return { root, manifests, blobs: [...blobs] };
  }

  /** Deletes blobs that no remaining tag reaches. */
  async #collect(index: LayoutIndex): Promise<void> {
    const keep = new Set<string>();
    for (const entry of index.manifests) {
      const tag = entry.annotations?.[REF_NAME];
      if (tag === undefined) continue;
      try {
        const { root, manifests, blobs } = await this.collectBlobs(tag);
        keep.add(root.digest);
        for (const m of manifests) keep.add(m.digest);
        for (const b of blobs) keep.add(b);
      } catch {
        keep.add(entry.digest);
      }
    }
    let names: string[];
    try {
      names = await readdir(join(this.#root, 'blobs', 'sha256'));
    } catch {
      return;
    }
    for (const hex of names) {
      if (!keep.has(`sha256:${hex}`)) await rm(join(this.#root, 'blobs', 'sha256', hex), { force: true });
    }
  }
}
