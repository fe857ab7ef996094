#!/usr/bin/env node
// The layering rules of src/ (see CONTRIBUTING.md, "Where code goes"), checked on every
// `npm run lint`:
//
//   1. no import cycle between folders of src/ (see unitOf) (static value imports: the ones that
//      run when a module is evaluated; `import type` is erased and lazy `import()` runs later);
//   2. src/schemas/ imports only typebox, src/shared/ and itself;
//   3. the data plane (the code one workload runner runs) imports nothing of the control plane,
//      and no Fastify, pino, Ajv or TypeBox, statically or lazily;
//   4. a folder is entered through an index.ts: `../proxy/index.js`, never `../proxy/flow.js`;
//      a lazy `import()` may name the one module it loads (that is what makes it lazy).
//
// Usage: node scripts/check-layers.mjs [--root DIR] [--graph]
// Exits 1 and prints one line per violation (file: rule: detail); --graph prints the
// folder-level value-import edges instead.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';

/**
 * Which program each unit of src/ belongs to. A unit is a top-level folder of src/, or a folder
 * under src/control/, src/dataplane/ or src/dataplane/middleware/; the ones under control/ and
 * dataplane/ take their plane from there. A top-level folder missing here is an error.
 */
export const PLANES = {
  // The bottom layers, shared by both programs.
  shared: 'base',
  schemas: 'base',
  protocol: 'base',
  config: 'base',
  store: 'base',
  // Ajv and CEL at run time, for the control plane and what a runner loads lazily.
  validation: 'base',
  // Read by both programs: a runner reads and updates its workload's record (rows, status, log
  // paths, exposure) and resolves its secret references. The workloads manager, which spawns
  // runners, lives in the same folder; a runner loading it is caught by
  // scripts/runner-footprint.mjs, not by this table.
  workloads: 'base',
  secrets: 'base',
  // The domain services of the control plane.
  registry: 'control',
  skills: 'control',
  clients: 'control',
  groups: 'control',
  // Mounted by a runner: the embedded OAuth 2.1 authorization server.
  authserver: 'data',
};

/** The unit a path under src/ belongs to ("proxy", "dataplane/proxy", "dataplane/middleware/audit"). */
export function unitOf(relPath) {
  const parts = relPath.split(/[\\/]/);
  if (parts[0] === 'dataplane' && parts[1] === 'middleware' && parts.length > 3)
    return parts.slice(0, 3).join('/');
  if ((parts[0] === 'control' || parts[0] === 'dataplane') && parts.length > 2)
    return parts.slice(0, 2).join('/');
  return parts[0];
}

const planeOf = (unit) =>
  unit.startsWith('control/') ? 'control' : unit.startsWith('dataplane/') ? 'data' : PLANES[unit];

/** Packages the data plane must not load: the control plane's HTTP framework, logger and validators. */
export const CONTROL_ONLY_PACKAGES = [
  /^fastify$/,
  /^@fastify\//,
  /^pino(-.*)?$/,
  /^ajv(-formats)?$/,
  /^typebox(\/|$)/,
];
/** What src/schemas/ may import besides itself and src/shared/. */
const SCHEMA_PACKAGES = [/^typebox(\/|$)/];

function walk(dir, out) {
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path, out);
    else if (/\.tsx?$/.test(name) && !name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

function isTypeOnlyImport(node) {
  const clause = node.importClause;
  if (!clause) return false; // `import './x.js'` runs the module
  if (clause.isTypeOnly) return true;
  if (clause.name) return false;
  const bindings = clause.namedBindings;
  if (!bindings) return false;
  if (ts.isNamespaceImport(bindings)) return false;
  return bindings.elements.length > 0 && bindings.elements.every((e) => e.isTypeOnly);
}

function isTypeOnlyExport(node) {
  if (node.isTypeOnly) return true;
  const clause = node.exportClause;
  return Boolean(
    clause &&
    ts.isNamedExports(clause) &&
    clause.elements.length > 0 &&
    clause.elements.every((e) => e.isTypeOnly),
  );
}

/** The imports of one file: { specifier, kind: 'value' | 'type' | 'lazy', line }. */
export function importsOf(text, fileName) {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false);
  const found = [];
  const lineOf = (node) => source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
  const visit = (node) => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      found.push({
        specifier: node.moduleSpecifier.text,
        kind: isTypeOnlyImport(node) ? 'type' : 'value',
        line: lineOf(node),
      });
    } else if (
      ts.isExportDeclaration(node) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      found.push({
        specifier: node.moduleSpecifier.text,
        kind: isTypeOnlyExport(node) ? 'type' : 'value',
        line: lineOf(node),
      });
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments.length > 0 &&
      ts.isStringLiteralLike(node.arguments[0])
    ) {
      found.push({ specifier: node.arguments[0].text, kind: 'lazy', line: lineOf(node) });
    } else if (
      ts.isImportTypeNode(node) &&
      ts.isLiteralTypeNode(node.argument) &&
      ts.isStringLiteral(node.argument.literal)
    ) {
      found.push({ specifier: node.argument.literal.text, kind: 'type', line: lineOf(node) });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

const unitAt = (srcDir, path) => unitOf(relative(srcDir, path));

/** Checks every file under `srcDir`; returns { violations, edges }. */
export function checkLayers(srcDir) {
  const violations = [];
  const edges = new Map(); // "from -> to" → first file:line that makes it
  const files = walk(srcDir, []);
  const units = new Set(files.map((f) => unitAt(srcDir, f)).filter((u) => !/\.tsx?$/.test(u)));
  for (const unit of units) {
    if (planeOf(unit) === undefined) {
      violations.push(`src/${unit}: unplaced folder: add it to PLANES in scripts/check-layers.mjs`);
    }
  }
  for (const file of files) {
    const rel = relative(srcDir, file).split(sep).join('/');
    const from = unitAt(srcDir, file);
    const plane = planeOf(from);
    for (const imp of importsOf(readFileSync(file, 'utf8'), file)) {
      const where = `src/${rel}:${imp.line}`;
      if (!imp.specifier.startsWith('.')) {
        if (imp.kind === 'type' || imp.specifier.startsWith('node:')) continue;
        if (plane === 'data' && CONTROL_ONLY_PACKAGES.some((p) => p.test(imp.specifier))) {
          violations.push(`${where}: data plane imports '${imp.specifier}' (control-plane only)`);
        }
        if (from === 'schemas' && !SCHEMA_PACKAGES.some((p) => p.test(imp.specifier))) {
          violations.push(`${where}: src/schemas imports package '${imp.specifier}' (only typebox)`);
        }
        continue;
      }
      const target = resolve(dirname(file), imp.specifier);
      const targetRel = relative(srcDir, target);
      if (targetRel.startsWith('..')) continue; // outside src/ (e.g. package.json)
      const to = unitOf(targetRel);
      if (to === from) continue;
      const inner = targetRel.split(sep).slice(to.split('/').length).join('/');
      // A lazy import() loads one part on purpose (a pipeline stage, the operator): it may name it.
      if (imp.kind !== 'lazy' && !/(^|\/)index\.(js|ts|tsx)$/.test(inner)) {
        violations.push(`${where}: enters src/${to} through '${inner}', not its index.ts`);
      }
      if (imp.kind === 'type') continue;
      if (from === 'schemas' && to !== 'shared')
        violations.push(`${where}: src/schemas imports src/${to} (only src/shared)`);
      if (plane === 'data' && planeOf(to) === 'control') {
        violations.push(`${where}: data plane (src/${from}) imports control plane (src/${to})`);
      }
      if (imp.kind === 'value') {
        const key = `${from} -> ${to}`;
        if (!edges.has(key)) edges.set(key, where);
      }
    }
  }
  for (const cycle of folderCycles(edges)) {
    const via = cycle
      .slice(0, -1)
      .map((f, i) => `${f} -> ${cycle[i + 1]} (${edges.get(`${f} -> ${cycle[i + 1]}`)})`);
    violations.push(`import cycle between folders: ${cycle.join(' -> ')}; edges: ${via.join('; ')}`);
  }
  return { violations, edges };
}

/** One shortest cycle per strongly connected component of the folder graph. */
function folderCycles(edges) {
  const next = new Map();
  for (const key of edges.keys()) {
    const [a, b] = key.split(' -> ');
    if (!next.has(a)) next.set(a, []);
    next.get(a).push(b);
  }
  const cycles = [];
  const reported = new Set();
  for (const start of [...next.keys()].sort()) {
    if (reported.has(start)) continue;
    // Breadth-first search from start back to start gives the shortest cycle through it.
    const parent = new Map([[start, null]]);
    const queue = [start];
    let closing = null;
    while (queue.length > 0 && !closing) {
      const node = queue.shift();
      for (const to of next.get(node) ?? []) {
        if (to === start) {
          closing = node;
          break;
        }
        if (!parent.has(to)) {
          parent.set(to, node);
          queue.push(to);
        }
      }
    }
    if (!closing) continue;
    const path = [start];
    for (let n = closing; n !== start; n = parent.get(n)) path.splice(1, 0, n);
    path.push(start);
    if (path.some((f) => reported.has(f))) continue;
    for (const f of path) reported.add(f);
    cycles.push(path);
  }
  return cycles;
}

const isMain = process.argv[1] && resolve(process.argv[1]) === resolve(new URL(import.meta.url).pathname);
if (isMain) {
  const args = process.argv.slice(2);
  const rootAt = args.indexOf('--root');
  const root = rootAt >= 0 ? args[rootAt + 1] : process.cwd();
  const { violations, edges } = checkLayers(join(root, 'src'));
  if (args.includes('--graph')) {
    for (const [edge, where] of [...edges].sort()) console.log(`${edge}\t${where}`);
  }
  if (violations.length > 0) {
    for (const v of violations) console.error(v);
    console.error(`check-layers: ${violations.length} violation(s)`);
    process.exit(1);
  }
  if (!args.includes('--graph')) console.log('check-layers: ok');
}
