#!/usr/bin/env node
// Compiles the configuration schemas a workload runner checks into standalone validators
// (Ajv's standalone code), written to src/schemas/validators/*.generated.ts and checked in: the
// runner then validates from the schema without loading Ajv or TypeBox, and `tsc` and the tests
// need no build step. test/unit/schemas/generated-validators.test.ts fails when a file is stale.
//
// Run: npm run gen:validators   (node --import tsx scripts/gen-validators.mjs; --check fails when a file is stale)
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import standaloneModule from 'ajv/dist/standalone/index.js';
import * as prettier from 'prettier';

const standaloneCode = standaloneModule.default;

/** The validators: which schema (an export of a module under src/schemas/) goes to which file. */
export const VALIDATORS = [
  {
    file: 'src/schemas/validators/audit.generated.ts',
    module: 'src/schemas/audit.ts',
    schema: 'AuditConfigSchema',
    // Sub-schemas the main one embeds more than once: see `withSharedRefs`.
    refs: ['AuditEventTypesSchema'],
  },
  {
    file: 'src/schemas/validators/skep-config.generated.ts',
    module: 'src/schemas/skep-config.ts',
    schema: 'ConfigSchema',
    // The config file: every problem (formatAjvError words them), and the defaults filled in, as
    // the Ajv of `createValidator` did when it compiled this schema at each start.
    verbose: false,
    useDefaults: true,
  },
  {
    file: 'src/schemas/validators/embedded-auth-server.generated.ts',
    module: 'src/schemas/embedded-auth-server.ts',
    schema: 'EmbeddedAuthServerConfigSchema',
    // Every problem, as createValidator reports them (the auth server lists them all), worded
    // by formatAjvError, which needs no failing schema in the error.
    allErrors: true,
    verbose: false,
  },
  {
    file: 'src/schemas/validators/rate-limit.generated.ts',
    module: 'src/schemas/rate-limit.ts',
    schema: 'RateLimitConfigSchema',
    refs: ['RateLimitBucketSchema'],
  },
  {
    file: 'src/schemas/validators/guardrails.generated.ts',
    module: 'src/schemas/guardrails.ts',
    schema: 'GuardrailsConfigSchema',
  },
  {
    file: 'src/schemas/validators/webhooks.generated.ts',
    module: 'src/schemas/webhooks.ts',
    schema: 'WebhookStageParametersSchema',
  },
  {
    file: 'src/schemas/validators/telemetry.generated.ts',
    module: 'src/schemas/telemetry.ts',
    schema: 'TelemetryConfigSchema',
  },
  {
    file: 'src/schemas/validators/authz-cedar.generated.ts',
    module: 'src/schemas/authz.ts',
    schema: 'CedarAuthzConfigSchema',
  },
  {
    file: 'src/schemas/validators/authz-http.generated.ts',
    module: 'src/schemas/authz.ts',
    schema: 'HttpAuthzConfigSchema',
  },
];

const root = new URL('../', import.meta.url);

// Ajv's runtime helpers are CommonJS modules the generated code would `require`; the one these
// schemas need (string length in code points, for minLength) is written in place instead, so a
// generated validator imports nothing.
const RUNTIME_HELPERS = {
  'ajv/dist/runtime/ucs2length': '$ucs2length',
};
const HELPER_CODE = {
  $ucs2length: 'const $ucs2length = (text) => [...text].length;',
};

function withoutRequires(code, file) {
  const used = new Set();
  const out = code.replace(/require\("([^"]+)"\)\.default/g, (_, name) => {
    const inline = RUNTIME_HELPERS[name];
    if (inline === undefined)
      throw new Error(`${file}: the validator needs ${name}; add it to RUNTIME_HELPERS`);
    used.add(inline);
    return inline;
  });
  return { code: out, helpers: [...used].map((name) => HELPER_CODE[name]) };
}

/** Index of the bracket closing the one at `open`, skipping string literals (JSON-quoted). */
function closing(code, open) {
  let depth = 0;
  for (let i = open; i < code.length; i++) {
    const c = code[i];
    if (c === '"') {
      for (i++; code[i] !== '"'; i++) if (code[i] === '\\') i++;
    } else if (c === '{' || c === '[' || c === '(') depth++;
    else if (c === '}' || c === ']' || c === ')') {
      depth--;
      if (depth === 0) return i;
    }
  }
  throw new Error('unbalanced generated code');
}

/** `a:1,b:{c:2},d` → [['a', '1'], ['b', '{c:2}'], ['d', 'd']] (top-level members of a literal). */
function members(body) {
  const out = [];
  let start = 0;
  let depth = 0;
  const push = (end) => {
    const text = body.slice(start, end).trim();
    const colon = text.indexOf(':');
    out.push(colon === -1 ? [text, text] : [text.slice(0, colon), text.slice(colon + 1)]);
    start = end + 1;
  };
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (c === '"') {
      for (i++; body[i] !== '"'; i++) if (body[i] === '\\') i++;
    } else if (c === '{' || c === '[' || c === '(') depth++;
    else if (c === '}' || c === ']' || c === ')') depth--;
    else if (c === ',' && depth === 0) push(i);
  }
  push(body.length);
  return out;
}

// What an error object keeps: formatValidatorError and formatAjvError read these (and
// `propertyName`, which Ajv sets afterwards). `schemaPath` and `schema` go: nothing reads them,
// and they were a third of a validator's size.
const KEPT = ['instancePath', 'keyword', 'params', 'message', 'parentSchema', 'data'];
const DROPPED = ['schemaPath', 'schema'];

/**
 * Writes each of Ajv's error object literals as a call of one function per file, `$error(…)`,
 * with only the members something reads: the validators are most of a runner's schema code, and
 * error sites most of a validator.
 */
function compactErrors(code, verbose) {
  const kept = verbose ? KEPT : KEPT.slice(0, 4);
  let out = '';
  let from = 0;
  for (;;) {
    // An error literal, or a call's options; not a validator's parameters (`{instancePath=""…}`).
    const match = /\{instancePath[,:]/g;
    match.lastIndex = from;
    const at = match.exec(code)?.index;
    if (at === undefined) break;
    const end = closing(code, at);
    const found = new Map(members(code.slice(at + 1, end)));
    if (!found.has('keyword')) {
      // The options of a call to another validator.
      out += code.slice(from, end + 1);
      from = end + 1;
      continue;
    }
    for (const name of found.keys())
      if (!kept.includes(name) && !DROPPED.includes(name) && name !== 'propertyName')
        throw new Error(`an error object with ${name}, which compactErrors does not know`);
    const args = kept.map((name) => {
      const value = found.get(name);
      if (value === undefined) throw new Error(`an error object without ${name}`);
      return value;
    });
    if (found.has('propertyName')) args.push(found.get('propertyName'));
    out += `${code.slice(from, at)}$error(${args.join(',')})`;
    from = end + 1;
  }
  if (from === 0) return code;
  out = `${out}${code.slice(from)}`.replace(
    /if\(vErrors === null\)\{vErrors = \[(err\d+)\];\}else \{vErrors\.push\(\1\);\}/g,
    '(vErrors ??= []).push($1);',
  );
  const helper =
    `const $error = (${kept.join(', ')}, propertyName) => propertyName === undefined ` +
    `? { ${kept.join(', ')} } : { ${kept.join(', ')}, propertyName };`;
  return `${helper}\n${out}`;
}

/** Members whose value is data, not a schema: copied as they are. */
const DATA_MEMBERS = new Set(['default', 'const', 'enum', 'examples', 'x-errors']);

/**
 * `schema` without its `description`s: a generated validator embeds the schemas its errors name
 * (`parentSchema`, for `x-errors`), and descriptions check nothing. A property that is named
 * `description` is a schema (an object), not a string, and stays.
 */
function withoutDescriptions(schema) {
  if (Array.isArray(schema)) return schema.map(withoutDescriptions);
  if (typeof schema !== 'object' || schema === null) return schema;
  const out = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'description' && typeof value === 'string') continue;
    out[key] = DATA_MEMBERS.has(key) ? value : withoutDescriptions(value);
  }
  return out;
}

/**
 * `schema` with every copy of a shared sub-schema replaced by a `$ref` to it, and those
 * sub-schemas with their `$id`: `refs` names exports of the module, each `$id` is the export's
 * name without `Schema`. The schemas embed such a part by value (the run configuration embeds
 * them, and its other readers resolve no `$id`); here it becomes one function the validator
 * calls at each place, instead of one copy of its code per place (a rate-limit bucket has four).
 * A name the schema does not embed is a stale entry, refused.
 */
function withSharedRefs(schema, refs, imported, file) {
  const shared = new Map(
    refs.map((name) => [JSON.stringify(withoutDescriptions(imported[name])), name.replace(/Schema$/, '')]),
  );
  const found = new Set();
  const replace = (node) => {
    if (Array.isArray(node)) return node.map(replace);
    if (typeof node !== 'object' || node === null) return node;
    const id = shared.get(JSON.stringify(node));
    if (id !== undefined) {
      found.add(id);
      return { $ref: id };
    }
    const out = {};
    for (const [key, value] of Object.entries(node))
      out[key] = DATA_MEMBERS.has(key) ? value : replace(value);
    return out;
  };
  const main = replace(schema);
  const parts = [...shared].map(([text, id]) => {
    if (!found.has(id)) throw new Error(`${file}: the schema embeds no ${id}; remove it from refs`);
    return { $id: id, ...JSON.parse(text) };
  });
  return { main, parts };
}

/** The generated files as [{ file, text }], formatted as the repository formats TypeScript. */
export async function renderValidators() {
  const options = await prettier.resolveConfig(fileURLToPath(new URL('src/schemas/index.ts', root)));
  const out = [];
  for (const {
    file,
    module,
    schema,
    refs = [],
    allErrors = true,
    verbose = true,
    useDefaults = false,
  } of VALIDATORS) {
    const imported = await import(new URL(module, root).href);
    // `verbose`: errors carry the failing schema, whose `x-errors` word the message.
    const ajv = new Ajv({
      code: { source: true, esm: true, optimize: true },
      strict: false,
      verbose,
      allErrors,
      useDefaults,
      inlineRefs: false,
    });
    const { main, parts } = withSharedRefs(withoutDescriptions(imported[schema]), refs, imported, file);
    for (const part of parts) ajv.addSchema(part);
    const validate = ajv.compile(main);
    const { code: standalone, helpers } = withoutRequires(standaloneCode(ajv, validate), file);
    // The patterns are compiled once, at load; marked pure so that a bundle drops a validator
    // nothing calls. Ajv names each function's schema in a `sourceURL` comment, for stack traces
    // of code made by `new Function`; here it is a file.
    const code = compactErrors(
      standalone
        .replace(/^"use strict";\s*/, '')
        .replaceAll(/\/\*# sourceURL="[^"]*" \*\/;?/g, '')
        .replaceAll('= new RegExp(', '= /* @__PURE__ */ new RegExp('),
      verbose,
    );
    const text = [
      `// Generated by scripts/gen-validators.mjs from ${schema} in ${module}; do not edit.`,
      '/* eslint-disable */',
      '// @ts-nocheck',
      ...helpers,
      code,
    ].join('\n');
    out.push({ file, text: await prettier.format(text, { ...options, parser: 'typescript' }) });
  }
  return out;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  let stale = false;
  for (const { file, text } of await renderValidators()) {
    const target = fileURLToPath(new URL(file, root));
    if (process.argv.includes('--check')) {
      let current = '';
      try {
        current = readFileSync(target, 'utf8');
      } catch {
        // missing counts as stale
      }
      if (current !== text) {
        process.stderr.write(`${file} is stale; run npm run gen:validators\n`);
        stale = true;
      }
    } else {
      writeFileSync(target, text);
      process.stdout.write(`wrote ${file}\n`);
    }
  }
  if (stale) process.exit(1);
}
