/**
 * The human docs page at `/api/doc`, rendered on the server from the OpenAPI document: every
 * operation grouped by tag (parameters, request body and responses as field tables), then
 * every named schema (`components.schemas`) as a field table — name, type, required,
 * description, nested objects as dotted rows and named ones as links. Descriptions are
 * Markdown (`markdown.ts`). The error-code table appears once, in the `Error` schema.
 *
 * The first view needs no script; the one inline script only adds a filter box and opens
 * the operation a link points to. Nothing is loaded from anywhere: the Content-Security-Policy
 * allows exactly this page's inline script and style (by hash) and nothing else.
 */
import { createHash } from 'node:crypto';
import { escapeHtml as esc, renderInline, renderMarkdown } from './markdown.js';
import { isRecord } from '../../shared/index.js';

type Json = Record<string, unknown>;

/** The parts of an OpenAPI 3.1 document the page reads. */
export interface OpenApiDocument {
  info: { title: string; version: string; description?: string };
  paths: Record<string, Record<string, unknown>>;
  components?: { schemas?: Record<string, unknown> };
}

interface Operation {
  tags?: string[];
  summary?: string;
  description?: string;
  security?: unknown[];
  parameters?: { name: string; in: string; required?: boolean; description?: string; schema?: Json }[];
  requestBody?: { required?: boolean; content?: Record<string, { schema?: Json }> };
  responses?: Record<string, { description?: string; content?: Record<string, { schema?: Json }> }>;
}

const METHODS = new Set(['get', 'put', 'post', 'delete', 'patch', 'head', 'options']);
const COMPONENTS = '#/components/schemas/';

/** An id usable in a URL fragment and an HTML attribute. */
const slug = (text: string): string => text.replace(/[^A-Za-z0-9_-]+/g, '-').replace(/^-+|-+$/g, '');

const schemaLink = (name: string): string => `<a href="#schema-${slug(name)}">${esc(name)}</a>`;

const refName = (schema: Json): string | undefined => {
  const ref = schema['$ref'];
  return typeof ref === 'string' && ref.startsWith(COMPONENTS) ? ref.slice(COMPONENTS.length) : undefined;
};

/** The type column: named schemas as links, arrays and maps by their items, enums by value. */
function typeOf(schema: unknown, depth = 0): string {
  if (!isRecord(schema) || depth > 8) return 'any';
  const name = refName(schema);
  if (name !== undefined) return schemaLink(name);
  if (Array.isArray(schema['enum'])) {
    return schema['enum'].map((value) => `<code>${esc(JSON.stringify(value))}</code>`).join(' | ');
  }
  const union = schema['anyOf'] ?? schema['oneOf'];
  if (Array.isArray(union)) return union.map((member) => typeOf(member, depth + 1)).join(' | ');
  const type = schema['type'];
  if (Array.isArray(type)) return type.map((t) => esc(String(t))).join(' | ');
  if (type === 'array') return `array of ${typeOf(schema['items'], depth + 1)}`;
  if (type === 'object' || (type === undefined && isRecord(schema['properties']))) {
    const extra = schema['additionalProperties'];
    if (!isRecord(schema['properties']) && isRecord(extra)) return `map of ${typeOf(extra, depth + 1)}`;
    return 'object';
  }
  if (typeof type === 'string') {
    const format = typeof schema['format'] === 'string' ? ` (${esc(schema['format'])})` : '';
    return esc(type) + format;
  }
  return 'any';
}

/** Constraints worth a mention next to the description. */
function constraints(schema: Json): string {
  const notes: string[] = [];
  if (schema['minimum'] !== undefined) notes.push(`min ${String(schema['minimum'])}`);
  if (schema['maximum'] !== undefined) notes.push(`max ${String(schema['maximum'])}`);
  if (schema['minLength'] !== undefined) notes.push(`min length ${String(schema['minLength'])}`);
  if (schema['maxLength'] !== undefined) notes.push(`max length ${String(schema['maxLength'])}`);
  if (typeof schema['pattern'] === 'string') notes.push(`pattern <code>${esc(schema['pattern'])}</code>`);
  if (schema['default'] !== undefined)
    notes.push(`default <code>${esc(JSON.stringify(schema['default']))}</code>`);
  return notes.length === 0 ? '' : `<p class="note">${notes.join(', ')}</p>`;
}

/** The inline object (not a named one) whose fields continue under `suffix`, if any. */
function nestedObject(schema: Json): { schema: Json; suffix: string } | undefined {
  const inlineObject = (s: unknown): s is Json =>
    isRecord(s) && refName(s) === undefined && isRecord(s['properties']);
  if (inlineObject(schema)) return { schema, suffix: '.' };
  if (schema['type'] === 'array' && inlineObject(schema['items']))
    return { schema: schema['items'], suffix: '[].' };
  const extra = schema['additionalProperties'];
  if (!isRecord(schema['properties']) && inlineObject(extra)) return { schema: extra, suffix: '{}.' };
  return undefined;
}

function fieldRows(schema: Json, prefix: string, rows: string[], depth: number): void {
  const properties = schema['properties'];
  if (!isRecord(properties) || depth > 6) return;
  const required = new Set(Array.isArray(schema['required']) ? (schema['required'] as string[]) : []);
  for (const [name, raw] of Object.entries(properties)) {
    const field = isRecord(raw) ? raw : {};
    const description = typeof field['description'] === 'string' ? renderMarkdown(field['description']) : '';
    rows.push(
      `<tr><td><code>${esc(prefix + name)}</code></td><td>${typeOf(field)}</td>` +
        `<td>${required.has(name) ? 'yes' : ''}</td><td>${description}${constraints(field)}</td></tr>`,
    );
    const nested = nestedObject(field);
    if (nested !== undefined) fieldRows(nested.schema, prefix + name + nested.suffix, rows, depth + 1);
  }
}

/** A schema as a field table; a schema without fields as its type. */
function schemaTable(schema: unknown): string {
  if (!isRecord(schema)) return '';
  if (!isRecord(schema['properties'])) return `<p>Type: ${typeOf(schema)}</p>`;
  const rows: string[] = [];
  fieldRows(schema, '', rows, 0);
  if (rows.length === 0) return '<p>Type: object (no fields).</p>';
  const more =
    schema['additionalProperties'] === true ? '<p class="note">Other fields may be present.</p>' : '';
  return (
    '<table class="fields"><thead><tr><th>Field</th><th>Type</th><th>Required</th><th>Description</th></tr></thead><tbody>' +
    rows.join('') +
    '</tbody></table>' +
    more
  );
}

/** A body or response schema: a named one as a link, an inline one as its table. */
function bodySchema(schema: unknown): string {
  if (!isRecord(schema)) return '';
  const name = refName(schema);
  if (name !== undefined) return `<p>Body: ${schemaLink(name)}</p>`;
  if (!isRecord(schema['properties'])) return `<p>Body: ${typeOf(schema)}</p>`;
  const description = typeof schema['description'] === 'string' ? renderMarkdown(schema['description']) : '';
  return description + schemaTable(schema);
}

const firstSchema = (content: Record<string, { schema?: Json }> | undefined): Json | undefined =>
  content === undefined ? undefined : Object.values(content)[0]?.schema;

/** A response's meaning; the generator's placeholder ("Default Response") says nothing. */
const meaning = (status: string, description: string | undefined): string =>
  description === undefined || description === 'Default Response'
    ? status.startsWith('2')
      ? 'Success.'
      : ''
    : description;

function renderOperation(method: string, path: string, op: Operation): string {
  const id = `op-${method}-${slug(path)}`;
  const filter = `${method} ${path} ${op.summary ?? ''}`.toLowerCase();
  const parts: string[] = [
    `<details class="op" id="${esc(id)}" data-filter="${esc(filter)}"><summary>` +
      `<b class="m ${esc(method)}">${esc(method.toUpperCase())}</b> <code>${esc(path)}</code> ${renderInline(op.summary ?? '')}` +
      ` <a class="anchor" href="#${esc(id)}" aria-label="Link to this operation">#</a></summary>`,
  ];
  if (op.description !== undefined) parts.push(renderMarkdown(op.description));
  if (Array.isArray(op.security) && op.security.length === 0)
    parts.push('<p class="note">No credentials needed.</p>');
  const parameters = op.parameters ?? [];
  if (parameters.length > 0) {
    parts.push(
      '<h4>Parameters</h4><table class="fields"><thead><tr><th>Name</th><th>In</th><th>Type</th><th>Required</th><th>Description</th></tr></thead><tbody>' +
        parameters
          .map(
            (p) =>
              `<tr><td><code>${esc(p.name)}</code></td><td>${esc(p.in)}</td><td>${typeOf(p.schema)}</td>` +
              `<td>${p.required === true ? 'yes' : ''}</td><td>${renderMarkdown(p.description ?? (typeof p.schema?.['description'] === 'string' ? p.schema['description'] : ''))}</td></tr>`,
          )
          .join('') +
        '</tbody></table>',
    );
  }
  const body = firstSchema(op.requestBody?.content);
  if (body !== undefined) parts.push('<h4>Request body</h4>' + bodySchema(body));
  const responses = Object.entries(op.responses ?? {});
  if (responses.length > 0) {
    const rows: string[] = [];
    const details: string[] = [];
    for (const [status, response] of responses) {
      const schema = firstSchema(response.content);
      const inline = schema !== undefined && refName(schema) === undefined && isRecord(schema['properties']);
      rows.push(
        `<tr><td><code>${esc(status)}</code></td><td>${renderInline(meaning(status, response.description))}</td>` +
          `<td>${schema === undefined ? 'none' : inline ? `<a href="#${esc(id)}-${esc(status)}">object</a>` : typeOf(schema)}</td></tr>`,
      );
      if (inline)
        details.push(`<h5 id="${esc(id)}-${esc(status)}">${esc(status)} body</h5>` + bodySchema(schema));
    }
    parts.push(
      '<h4>Responses</h4><table class="responses"><thead><tr><th>Status</th><th>Meaning</th><th>Body</th></tr></thead><tbody>' +
        rows.join('') +
        '</tbody></table>' +
        details.join(''),
    );
  }
  parts.push('</details>');
  return parts.join('\n');
}

const STYLE = `
body{font:15px/1.5 system-ui,sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem;color:#1d2433;background:#fff}
h1 small{color:#667;font-weight:normal}nav{margin:1rem 0;display:flex;flex-wrap:wrap;gap:.3rem 1rem}
details{border:1px solid #dde;border-radius:6px;margin:.4rem 0;padding:.3rem .7rem}summary{cursor:pointer}
pre{background:#f5f6fa;padding:.6rem;overflow:auto;font-size:13px}code{font-size:13px;background:#f5f6fa;padding:0 .2em;border-radius:3px}
table{border-collapse:collapse;margin:.5rem 0;width:100%}th,td{border:1px solid #dde;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f5f6fa}td p{margin:0 0 .3rem}td p:last-child{margin:0}.note{color:#556;font-size:13px}
.m{display:inline-block;min-width:4.5rem}.get{color:#1769aa}.post{color:#2e7d32}.put{color:#b26a00}.delete{color:#c62828}.patch{color:#6a1b9a}
.anchor{color:#99a;text-decoration:none;margin-left:.3rem}section.schema{border-top:1px solid #dde;margin-top:1.2rem}
#filter{width:100%;max-width:30rem;padding:.4rem;font:inherit;margin:.5rem 0}
@media (prefers-color-scheme:dark){body{color:#dfe3ec;background:#14171f}pre,code,th{background:#222836}
details,th,td,section.schema{border-color:#333a4a}a{color:#7fb3ff}.note,h1 small{color:#9aa3b5}}
`;

/**
 * Progressive enhancement only: a filter box over operations and schemas, and the operation a
 * URL fragment names is opened (the page is complete without it).
 */
const SCRIPT = `
const box = document.getElementById('filter');
box.hidden = false;
const items = [...document.querySelectorAll('[data-filter]')];
box.addEventListener('input', () => {
  const q = box.value.trim().toLowerCase();
  for (const el of items) el.hidden = q !== '' && !el.dataset.filter.includes(q);
  for (const s of document.querySelectorAll('section.tag')) s.hidden = q !== '' && !s.querySelector('[data-filter]:not([hidden])');
});
const openTarget = () => {
  const el = location.hash.length > 1 ? document.getElementById(decodeURIComponent(location.hash.slice(1))) : null;
  const op = el && el.closest('details');
  if (op) { op.open = true; el.scrollIntoView(); }
};
addEventListener('hashchange', openTarget);
openTarget();
`;

const sha256 = (text: string): string => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;

/** The page's Content-Security-Policy: its own inline script and style, nothing else. */
export const DOCS_CSP =
  `default-src 'none'; script-src ${sha256(SCRIPT)}; style-src ${sha256(STYLE)}; ` +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** The complete page for `doc`. */
export function renderDocsPage(doc: OpenApiDocument): string {
  const byTag = new Map<string, string[]>();
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, raw] of Object.entries(item)) {
      if (!METHODS.has(method) || !isRecord(raw)) continue;
      const op = raw as Operation;
      const tag = op.tags?.[0] ?? 'other';
      const list = byTag.get(tag) ?? [];
      list.push(renderOperation(method, path, op));
      byTag.set(tag, list);
    }
  }
  const schemas = Object.entries(doc.components?.schemas ?? {}).sort(([a], [b]) => a.localeCompare(b));
  const title = `${doc.info.title} ${doc.info.version}`;
  const out: string[] = [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8">',
    `<title>${esc(title)}</title>`,
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<style>${STYLE}</style></head><body>`,
    `<header><h1>${esc(doc.info.title)} <small>${esc(doc.info.version)}</small></h1>`,
    renderMarkdown(doc.info.description ?? ''),
    '<nav>' +
      [...byTag.keys()].map((tag) => `<a href="#tag-${esc(slug(tag))}">${esc(tag)}</a>`).join('') +
      '<a href="#schemas">schemas</a></nav>',
    '<input id="filter" type="search" placeholder="Filter operations and schemas" aria-label="Filter operations and schemas" hidden>',
    '</header><main id="doc">',
  ];
  for (const [tag, operations] of byTag) {
    out.push(
      `<section class="tag" id="tag-${esc(slug(tag))}"><h2>${esc(tag)}</h2>`,
      ...operations,
      '</section>',
    );
  }
  out.push('<section id="schemas"><h2>Schemas</h2>');
  for (const [name, schema] of schemas) {
    const description =
      isRecord(schema) && typeof schema['description'] === 'string' ? schema['description'] : '';
    out.push(
      `<section class="schema" id="schema-${esc(slug(name))}" data-filter="${esc(name.toLowerCase())}">` +
        `<h3>${esc(name)} <a class="anchor" href="#schema-${esc(slug(name))}" aria-label="Link to this schema">#</a></h3>` +
        renderMarkdown(description) +
        schemaTable(schema) +
        '</section>',
    );
  }
  out.push('</section></main>', `<script>${SCRIPT}</script>`, '</body></html>', '');
  return out.join('\n');
}
