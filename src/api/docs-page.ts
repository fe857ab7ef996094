/**
 * The human docs page at `/api/doc`: one self-contained HTML file that reads
 * `/api/openapi.json` and lists every operation with its parameters, body and responses.
 * It needs no network and no asset server, and costs nothing at start-up.
 */

const SCRIPT = `
const esc = (s) => String(s ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
const json = (v) => '<pre>' + esc(JSON.stringify(v, null, 2)) + '</pre>';
fetch('/api/openapi.json').then((r) => r.json()).then((doc) => {
  document.title = doc.info.title + ' ' + doc.info.version;
  const out = ['<h1>' + esc(doc.info.title) + ' <small>' + esc(doc.info.version) + '</small></h1>', '<p>' + esc(doc.info.description) + '</p>'];
  const byTag = new Map();
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      const tag = (op.tags && op.tags[0]) || 'other';
      if (!byTag.has(tag)) byTag.set(tag, []);
      byTag.get(tag).push({ path, method, op });
    }
  }
  out.push('<nav>' + [...byTag.keys()].map((t) => '<a href="#' + esc(t) + '">' + esc(t) + '</a>').join(' · ') + '</nav>');
  for (const [tag, ops] of byTag) {
    out.push('<h2 id="' + esc(tag) + '">' + esc(tag) + '</h2>');
    for (const { path, method, op } of ops) {
      out.push('<details><summary><b class="m ' + esc(method) + '">' + esc(method.toUpperCase()) + '</b> <code>' + esc(path) + '</code> ' + esc(op.summary) + '</summary>');
      if (op.description) out.push('<p>' + esc(op.description) + '</p>');
      if (op.parameters && op.parameters.length) out.push('<h4>Parameters</h4><ul>' + op.parameters.map((p) => '<li><code>' + esc(p.name) + '</code> (' + esc(p.in) + (p.required ? ', required' : '') + ') ' + esc(p.description || (p.schema && p.schema.type) || '') + '</li>').join('') + '</ul>');
      const body = op.requestBody && op.requestBody.content && op.requestBody.content['application/json'];
      if (body) out.push('<h4>Request body</h4>' + json(body.schema));
      for (const [status, res] of Object.entries(op.responses || {})) {
        const schema = res.content && Object.values(res.content)[0] && Object.values(res.content)[0].schema;
        out.push('<h4>' + esc(status) + ' ' + esc(res.description) + '</h4>' + (schema ? json(schema) : ''));
      }
      out.push('</details>');
    }
  }
  document.getElementById('doc').innerHTML = out.join('');
}).catch((err) => { document.getElementById('doc').textContent = 'Cannot load /api/openapi.json: ' + err; });
`;

export const DOCS_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Skep API</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:15px/1.5 system-ui,sans-serif;max-width:70rem;margin:2rem auto;padding:0 1rem;color:#1d2433}
h1 small{color:#667;font-weight:normal}nav{margin:1rem 0}details{border:1px solid #dde;border-radius:6px;margin:.4rem 0;padding:.3rem .7rem}
summary{cursor:pointer}pre{background:#f5f6fa;padding:.6rem;overflow:auto;font-size:13px}.m{display:inline-block;min-width:4.5rem}
.get{color:#1769aa}.post{color:#2e7d32}.put{color:#b26a00}.delete{color:#c62828}.patch{color:#6a1b9a}
</style></head>
<body><div id="doc">Loading the API description…</div><script>${SCRIPT}</script></body></html>
`;
