/**
 * A small, safe Markdown renderer for the descriptions of the API docs page: the subset the
 * descriptions use — paragraphs, fenced code blocks, pipe tables, `-`/`*`/`1.` lists, and
 * inline `code`, **strong**, *emphasis* / _emphasis_ and [links](url).
 *
 * Safe: every character of the input is HTML-escaped before any markup is added, so HTML in
 * a description (`<script>`, `<img onerror>`) is shown as text; a link's target must be
 * `http(s):`, `mailto:`, a path (`/…`) or a fragment (`#…`), else the link stays text.
 */

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Escapes text for HTML element content and (double- or single-quoted) attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

const SAFE_URL = /^(?:https?:\/\/|mailto:|\/|#)/i;

/** Inline markup of text that holds no code span; `text` is raw, the result is HTML. */
function inlineText(text: string): string {
  let html = escapeHtml(text);
  // Links: the label and target are already escaped, so neither can close the attribute.
  html = html.replace(/\[([^\]]+)\]\(([^)\s]+)\)/g, (whole: string, label: string, url: string) =>
    SAFE_URL.test(url) ? `<a href="${url}">${label}</a>` : whole,
  );
  html = html.replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>');
  html = html.replace(/(^|[^\w*])\*([^*\s](?:[^*]*[^*\s])?)\*(?![\w*])/g, '$1<em>$2</em>');
  // `_x_` only between non-word characters, so snake_case names stay as they are.
  html = html.replace(/(^|[^\w])_([^_\s](?:[^_]*[^_\s])?)_(?!\w)/g, '$1<em>$2</em>');
  return html;
}

/** Inline Markdown → HTML: code spans first (their content is only escaped), then the rest. */
export function renderInline(text: string): string {
  let html = '';
  let rest = text;
  for (;;) {
    const open = rest.indexOf('`');
    if (open < 0) break;
    const close = rest.indexOf('`', open + 1);
    if (close < 0) break;
    html += inlineText(rest.slice(0, open)) + '<code>' + escapeHtml(rest.slice(open + 1, close)) + '</code>';
    rest = rest.slice(close + 1);
  }
  return html + inlineText(rest);
}

const LIST_ITEM = /^\s*(?:[-*]|\d+[.)])\s+/;
const TABLE_RULE = /^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*$/;

/** Cells of a pipe-table row (`| a | b |`); a `\|` is a literal bar. */
function cells(row: string): string[] {
  const trimmed = row
    .trim()
    .replace(/^\|/, '')
    .replace(/(?<!\\)\|$/, '');
  return trimmed.split(/(?<!\\)\|/).map((cell) => cell.trim().replaceAll('\\|', '|'));
}

/** Block Markdown → HTML. */
export function renderMarkdown(source: string): string {
  const lines = source.replace(/\r\n?/g, '\n').split('\n');
  const out: string[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i] ?? '';
    if (line.trim() === '') {
      i++;
      continue;
    }
    const fence = /^\s*(```+|~~~+)/.exec(line);
    if (fence !== null) {
      const marker = fence[1] ?? '```';
      const body: string[] = [];
      i++;
      while (i < lines.length && !(lines[i] ?? '').trim().startsWith(marker)) body.push(lines[i++] ?? '');
      i++; // the closing fence (or the end)
      out.push(`<pre><code>${escapeHtml(body.join('\n'))}</code></pre>`);
      continue;
    }
    if (line.includes('|') && TABLE_RULE.test(lines[i + 1] ?? '')) {
      const head = cells(line);
      i += 2;
      const rows: string[][] = [];
      while (i < lines.length && (lines[i] ?? '').includes('|') && (lines[i] ?? '').trim() !== '')
        rows.push(cells(lines[i++] ?? ''));
      out.push(
        '<table><thead><tr>' +
          head.map((cell) => `<th>${renderInline(cell)}</th>`).join('') +
          '</tr></thead><tbody>' +
          rows
            .map((row) => '<tr>' + row.map((cell) => `<td>${renderInline(cell)}</td>`).join('') + '</tr>')
            .join('') +
          '</tbody></table>',
      );
      continue;
    }
    if (LIST_ITEM.test(line)) {
      const ordered = /^\s*\d/.test(line);
      const items: string[] = [];
      while (i < lines.length && (lines[i] ?? '').trim() !== '') {
        const current = lines[i] ?? '';
        if (LIST_ITEM.test(current)) items.push(current.replace(LIST_ITEM, ''));
        else items[items.length - 1] += ' ' + current.trim(); // a continuation line
        i++;
      }
      const tag = ordered ? 'ol' : 'ul';
      out.push(`<${tag}>` + items.map((item) => `<li>${renderInline(item)}</li>`).join('') + `</${tag}>`);
      continue;
    }
    const paragraph: string[] = [];
    while (i < lines.length) {
      const current = lines[i] ?? '';
      if (current.trim() === '' || /^\s*(```|~~~)/.test(current) || LIST_ITEM.test(current)) break;
      if (current.includes('|') && TABLE_RULE.test(lines[i + 1] ?? '')) break;
      paragraph.push(current.trim());
      i++;
    }
    out.push(`<p>${renderInline(paragraph.join(' '))}</p>`);
  }
  return out.join('\n');
}
