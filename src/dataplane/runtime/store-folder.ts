/**
 * The folder layout the npm and uv package stores share: entries named by a key (package name,
 * exact version, optional registry or index digest), and scratch folders beside them named
 * `.<label>-<pid>-<random hex>` by the start that made them, so the folders of a start that
 * died (a killed runner) can be found and removed by the next one.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { processAlive } from '../../shared/index.js';

/** What an entry's folder name says. */
export interface StoreKey {
  name: string;
  version: string;
  /** '' for the default registry or index. */
  digest: string;
}

/** How a store names its entries and orders their versions. */
export interface StoreKeys {
  format(name: string, version: string, digest: string): string;
  /** The key a folder name holds, or undefined for any other name. */
  parse(folder: string): StoreKey | undefined;
  /** The name as entries spell it (the uv store normalizes Python names). */
  canonicalName(name: string): string;
  compareVersions(a: string, b: string): number;
  /** A file whose presence marks a finished entry, when entries are not complete on sight. */
  completeFile?: string;
}

/** `.<label>-<pid>-<hex>`: a scratch folder and the pid of the start that made it. */
const SCRATCH = /^\..+-(\d+)-[0-9a-f]+$/;

export class StoreFolder {
  constructor(
    readonly root: string,
    private readonly keys: StoreKeys,
  ) {}

  /** The entry folder of `name` at `version` (of the registry or index whose digest is `digest`). */
  entryDir(name: string, version: string, digest = ''): string {
    return join(this.root, this.keys.format(name, version, digest));
  }

  /** Versions of `name` under `digest` with a finished entry, highest first. */
  installedVersions(name: string, digest = ''): string[] {
    let folders: string[];
    try {
      folders = readdirSync(this.root);
    } catch {
      return [];
    }
    const wanted = this.keys.canonicalName(name);
    const complete = this.keys.completeFile;
    return folders
      .flatMap((folder) => {
        const key = this.keys.parse(folder);
        if (key === undefined || key.name !== wanted || key.digest !== digest) return [];
        if (complete !== undefined && !existsSync(join(this.root, folder, complete))) return [];
        return [key.version];
      })
      .sort((a, b) => this.keys.compareVersions(b, a));
  }

  /** A fresh empty scratch folder beside the entries. */
  scratch(label: string): string {
    mkdirSync(this.root, { recursive: true, mode: 0o700 });
    const dir = join(this.root, `.${label}-${process.pid}-${randomBytes(6).toString('hex')}`);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    return dir;
  }

  /** Removes the scratch folders of starts that are gone. */
  sweep(): void {
    let folders: string[];
    try {
      folders = readdirSync(this.root);
    } catch {
      return;
    }
    for (const folder of folders) {
      const pid = SCRATCH.exec(folder)?.[1];
      if (pid === undefined || processAlive(Number(pid))) continue;
      rmSync(join(this.root, folder), { recursive: true, force: true });
    }
  }
}
