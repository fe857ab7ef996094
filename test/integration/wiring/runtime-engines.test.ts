/**
 * Every runtime dependency must declare support for the oldest Node Skep supports (its own
 * `engines`, 20.19): a package that says `node >= 22` works on Node 20 by luck, if at all
 * (`cookie` 2, through fastify → light-my-request, was one: package.json
 * pins it to 1.1.1 there through `overrides`). Runtime code is what `npm ls --all --omit=dev`
 * lists (the packages the bundles load from node_modules) and what esbuild bundles: the
 * devDependencies that src/ imports, with their own dependencies. Reads `npm ls --all` and each
 * installed package's package.json.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

type Version = [number, number, number];

function parse(text: string): { v: Version; wild: number } {
  // `20`, `20.x`, `20.19`, `20.19.0`, `v20.1.2`: missing or wildcard parts are wild.
  const parts = text.replace(/^v/, '').split('.');
  const nums: number[] = [];
  for (const p of parts.slice(0, 3)) {
    if (p === 'x' || p === 'X' || p === '*' || p === '') break;
    nums.push(Number.parseInt(p, 10));
  }
  return { v: [nums[0] ?? 0, nums[1] ?? 0, nums[2] ?? 0], wild: 3 - nums.length };
}

function cmp(a: Version, b: Version): number {
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return (a[i] as number) - (b[i] as number);
  return 0;
}

/** The upper bound (exclusive) of `x.y.z` with `wild` trailing parts left open. */
function bump(v: Version, index: number): Version {
  const out: Version = [v[0], v[1], v[2]];
  out[index] = (out[index] as number) + 1;
  for (let i = index + 1; i < 3; i++) out[i] = 0;
  return out;
}

/** npm semver range satisfaction, for the forms `engines` fields use. */
function satisfies(version: string, range: string): boolean {
  const v = parse(version).v;
  return range.split('||').some((set) => {
    const text = set.trim().replace(/\s+-\s+/, ' - ');
    if (text === '' || text === '*') return true;
    const hyphen = /^(\S+) - (\S+)$/.exec(text);
    if (hyphen !== null) {
      const hi = parse(hyphen[2] as string);
      const upper = hi.wild === 0 ? cmp(v, hi.v) <= 0 : cmp(v, bump(hi.v, 2 - hi.wild)) < 0;
      return cmp(v, parse(hyphen[1] as string).v) >= 0 && upper;
    }
    return text
      .replace(/([<>=^~]+)\s+/g, '$1')
      .split(/\s+/)
      .every((comparator) => {
        const m = /^(<=|>=|<|>|=|\^|~)?(.*)$/.exec(comparator) as RegExpExecArray;
        const op = m[1] ?? '';
        const { v: b, wild } = parse(m[2] as string);
        const c = cmp(v, b);
        switch (op) {
          case '>=':
            return c >= 0;
          case '>':
            return wild > 0 ? cmp(v, bump(b, 2 - wild)) >= 0 : c > 0;
          case '<=':
            return wild > 0 ? cmp(v, bump(b, 2 - wild)) < 0 : c <= 0;
          case '<':
            return c < 0;
          case '^': {
            const index = b[0] !== 0 || wild >= 2 ? 0 : b[1] !== 0 || wild >= 1 ? 1 : 2;
            return c >= 0 && cmp(v, bump(b, index)) < 0;
          }
          case '~':
            return c >= 0 && cmp(v, bump(b, wild >= 2 ? 0 : 1)) < 0;
          default:
            return wild === 3 || (c >= 0 && cmp(v, wild === 0 ? bump(b, 2) : bump(b, 2 - wild)) < 0);
        }
      });
  });
}

test('the range check itself', () => {
  const yes: [string, string][] = [
    ['20.19.0', '>=20.19'],
    ['20.19.0', '>=18'],
    ['20.19.0', '^18.19 || >=20.6'],
    ['20.19.0', '20.x || 22.x || 23.x'],
    ['20.19.0', '>= 12.22.0'],
    ['20.19.0', '>=14.0.0 <21'],
    ['20.19.0', '^20.0.0'],
    ['20.19.0', '18 - 20'],
    ['20.19.0', '*'],
  ];
  const no: [string, string][] = [
    ['20.19.0', '>=22'],
    ['20.19.0', '>= 22.0.0'],
    ['20.19.0', '^22'],
    ['20.19.0', '22.x || 24.x'],
    ['20.19.0', '>=20.20'],
    ['20.19.0', '~20.18.0'],
    ['20.19.0', '<20'],
  ];
  for (const [v, r] of yes) assert.equal(satisfies(v, r), true, `${v} in ${r}`);
  for (const [v, r] of no) assert.equal(satisfies(v, r), false, `${v} not in ${r}`);
});

/** The packages that src/ imports (statically, on demand or through lazyRequire), by name. */
function importedBySources(): Set<string> {
  const names = new Set<string>();
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (/\.tsx?$/.test(entry.name))
        for (const m of readFileSync(path, 'utf8').matchAll(
          /(?:\bfrom|\bimport\(|\blazyRequire(?:<[^>]*>)?\()\s*'([^.'\s][^'\s]*)'/g,
        )) {
          const id = m[1] as string;
          if (id.startsWith('node:')) continue;
          const parts = id.split('/');
          names.add(parts.slice(0, id.startsWith('@') ? 2 : 1).join('/'));
        }
    }
  };
  walk(join(ROOT, 'src'));
  return names;
}

test('every runtime dependency supports the oldest Node that Skep supports', () => {
  const own = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    engines: { node: string };
    dependencies: Record<string, string>;
    devDependencies: Record<string, string>;
  };
  const oldest = /^>=\s*(\d+\.\d+(?:\.\d+)?)$/.exec(own.engines.node)?.[1];
  assert.ok(oldest, `Skep's engines.node is a '>=' range: ${own.engines.node}`);
  const bundled = [...importedBySources()].filter((name) => name in own.devDependencies);
  assert.ok(bundled.includes('fastify'), `the bundled packages were found: ${bundled.join(', ')}`);
  const runtime = new Set([...Object.keys(own.dependencies), ...bundled]);
  const ls = spawnSync('npm', ['ls', '--all', '--json', '--long'], {
    cwd: ROOT,
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
  });
  assert.equal(ls.status, 0, `npm ls reports problems: ${ls.stderr}`);
  interface Node {
    version?: string;
    path?: string;
    dependencies?: Record<string, Node>;
  }
  const seen = new Map<string, string>();
  const walk = (node: Node, trail: string[]) => {
    for (const [name, dep] of Object.entries(node.dependencies ?? {})) {
      if (dep.path === undefined || seen.has(dep.path)) continue;
      seen.set(dep.path, [...trail, `${name}@${dep.version}`].join(' > '));
      walk(dep, [...trail, name]);
    }
  };
  const tree = JSON.parse(ls.stdout) as Node;
  for (const [name, dep] of Object.entries(tree.dependencies ?? {}))
    if (runtime.has(name)) walk({ dependencies: { [name]: dep } }, []);
  assert.ok(seen.size > 100, `the runtime tree was read (${seen.size} packages)`);
  const unsupported: string[] = [];
  for (const [path, trail] of seen) {
    const pkg = JSON.parse(readFileSync(join(path, 'package.json'), 'utf8')) as {
      engines?: { node?: unknown };
    };
    const range = pkg.engines?.node;
    if (typeof range === 'string' && !satisfies(`${oldest}.0`.split('.').slice(0, 3).join('.'), range))
      unsupported.push(`${trail} (engines.node ${range})`);
  }
  assert.deepEqual(unsupported, [], `these need a Node newer than ${oldest}`);
});

test('npm ci on the oldest supported Node warns about no package: every locked package admits it', () => {
  // npm ci prints `EBADENGINE` for each locked package (dev ones included) whose `engines.node`
  // excludes the running Node; the lockfile records those ranges, so they are checked here.
  const own = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };
  const oldest = /^>=\s*(\d+\.\d+(?:\.\d+)?)$/.exec(own.engines.node)?.[1] as string;
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { version?: string; engines?: { node?: unknown } | unknown[] }>;
  };
  const entries = Object.entries(lock.packages);
  assert.ok(entries.length > 300, `the lockfile was read (${entries.length} packages)`);
  const version = `${oldest}.0`.split('.').slice(0, 3).join('.');
  const unsupported = entries.flatMap(([path, pkg]) => {
    const range = Array.isArray(pkg.engines) ? undefined : pkg.engines?.node;
    return typeof range === 'string' && !satisfies(version, range)
      ? [`${path}@${pkg.version ?? '?'} (engines.node ${range})`]
      : [];
  });
  assert.deepEqual(unsupported, [], `npm ci would warn EBADENGINE for these on Node ${oldest}`);
});
