// An esbuild plugin for the code-split CLI bundle: an import of a folder's index
// (`import { SkepError, terminalSafe } from '../shared/index.js'`) becomes imports of the
// files that define those names (`../shared/errors.js`, `../shared/terminal-text.js`).
//
// Why: esbuild assigns code to chunks by file, following every re-export of an index that
// some part of the program uses. A command loaded on demand that imports one name from
// `shared/index.ts` would otherwise load, in shared chunks, every module that index re-exports
// and anything else in the program uses (the pino logger, the HTTP client, Redis). Sources
// keep importing through the index (the folder's public surface); only the bundle changes.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The project's own sources; packages are left as they are. */
const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../src') + sep;

const EXPORT_FROM = /export\s+(type\s+)?\{([^}]*)\}\s*from\s*'([^']+)';/g;
const IMPORT_FROM = /import\s+(type\s+)?\{([^}]*)\}\s*from\s*'([^']+)';/g;

/** `'./x.js'` from `file` → the absolute `.ts` path (or undefined when not a source file). */
function sourceOf(file, specifier) {
  if (!specifier.startsWith('.')) return undefined;
  const target = resolve(dirname(file), specifier).replace(/\.js$/, '.ts');
  return existsSync(target) ? target : undefined;
}

/** `a`, `a as b`, `type a` → { name: a, as: b, type } (empty entries dropped). */
function specifiers(list) {
  return list
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map((s) => {
      const type = s.startsWith('type ');
      const [name, as = name] = s.replace(/^type\s+/, '').split(/\s+as\s+/);
      return { name, as, type };
    });
}

/** For one index file: exported name → { file, name } of its definition (value exports only). */
const reexportsCache = new Map();
function reexportsOf(index) {
  let map = reexportsCache.get(index);
  if (map !== undefined) return map;
  map = new Map();
  reexportsCache.set(index, map);
  const text = readFileSync(index, 'utf8');
  for (const m of text.matchAll(EXPORT_FROM)) {
    if (m[1] !== undefined) continue;
    const target = sourceOf(index, m[3]);
    if (target === undefined) continue;
    for (const s of specifiers(m[2])) if (!s.type) map.set(s.as, { file: target, name: s.name });
  }
  return map;
}

/** Follows index → index re-exports down to the defining file. */
function definitionOf(index, name) {
  let found = reexportsOf(index).get(name);
  for (let hops = 0; found !== undefined && found.file.endsWith('/index.ts') && hops < 5; hops++) {
    const next = reexportsOf(found.file).get(found.name);
    if (next === undefined) break;
    found = next;
  }
  return found;
}

function specifierFrom(file, target) {
  const rel = relative(dirname(file), target).replace(/\.ts$/, '.js');
  return rel.startsWith('.') ? rel : `./${rel}`;
}

/** The source of `file` with its value imports of an index pointed at the defining files. */
export function directImports(file, text) {
  return text.replace(IMPORT_FROM, (whole, typeOnly, list, specifier) => {
    if (typeOnly !== undefined || !/\/index\.js$/.test(specifier)) return whole;
    const index = sourceOf(file, specifier);
    if (index === undefined) return whole;
    const byFile = new Map();
    const kept = [];
    for (const s of specifiers(list)) {
      if (s.type) continue;
      const def = definitionOf(index, s.name);
      if (def === undefined) {
        kept.push(s.name === s.as ? s.name : `${s.name} as ${s.as}`);
        continue;
      }
      const names = byFile.get(def.file) ?? [];
      names.push(def.name === s.as ? def.name : `${def.name} as ${s.as}`);
      byFile.set(def.file, names);
    }
    const lines = [...byFile].map(
      ([target, names]) => `import { ${names.join(', ')} } from '${specifierFrom(file, target)}';`,
    );
    if (kept.length > 0) lines.push(`import { ${kept.join(', ')} } from '${specifier}';`);
    // Keeps the line count, so the source map still points at the right lines.
    return lines.join(' ') + '\n'.repeat(whole.split('\n').length - 1);
  });
}

export const directImportsPlugin = {
  name: 'direct-imports',
  setup(build) {
    build.onLoad({ filter: /\.tsx?$/ }, (args) =>
      args.path.startsWith(SRC)
        ? {
            contents: directImports(args.path, readFileSync(args.path, 'utf8')),
            loader: args.path.endsWith('.tsx') ? 'tsx' : 'ts',
          }
        : undefined,
    );
  },
};
