/** The Skep version, read once from package.json (works from src/ under tsx and from dist/). */
import { readFileSync } from 'node:fs';

function readVersion(): string {
  // src/shared/version.ts, dist/shared/version.js and the bundle dist/skep.mjs
  for (const rel of ['../../package.json', '../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(rel, import.meta.url), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === 'skep' && typeof pkg.version === 'string') return pkg.version;
    } catch {
      // try the next candidate
    }
  }
  return '0.0.0-unknown';
}

export const SKEP_VERSION = readVersion();
