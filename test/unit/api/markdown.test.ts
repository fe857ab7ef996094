/** The docs page's Markdown renderer: the subset the API descriptions use, and its escaping. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { escapeHtml, renderInline, renderMarkdown } from '../../../src/control/api/markdown.js';

test('HTML in a description stays text: a <script> is escaped, not markup', () => {
  const html = renderMarkdown('Hello <script>alert("x")</script> & <img src=x onerror=alert(1)>');
  assert.equal(
    html,
    '<p>Hello &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &lt;img src=x onerror=alert(1)&gt;</p>',
  );
  assert.doesNotMatch(html, /<script|<img/);
  // Inside code spans, code blocks, table cells, list items and link labels too.
  const everywhere = renderMarkdown(
    '`<script>`\n\n```\n<script>x</script>\n```\n\n| a |\n|---|\n| <script> |\n\n- <script>\n\n[<b>x</b>](https://example.com)',
  );
  assert.doesNotMatch(everywhere, /<script|<b>/);
  assert.equal((everywhere.match(/&lt;script&gt;/g) ?? []).length, 4);
});

test('links: only http(s), mailto, paths and fragments; a quote cannot leave the attribute', () => {
  assert.equal(renderInline('[docs](https://example.com/a)'), '<a href="https://example.com/a">docs</a>');
  assert.equal(renderInline('[schema](#schema-Error)'), '<a href="#schema-Error">schema</a>');
  assert.equal(renderInline('[x](javascript:alert(1))'), '[x](javascript:alert(1))');
  assert.equal(renderInline('[x](data:text/html,hi)'), '[x](data:text/html,hi)');
  const quoted = renderInline('[x](https://e.com/"onmouseover="alert(1))');
  assert.doesNotMatch(quoted, /"onmouseover/);
});

test('inline markup: code, strong, emphasis; snake_case and code content are left alone', () => {
  assert.equal(
    renderInline('Use `env_vars` with **care**, *really* or _really_.'),
    'Use <code>env_vars</code> with <strong>care</strong>, <em>really</em> or <em>really</em>.',
  );
  assert.equal(renderInline('proxy_port and target_port'), 'proxy_port and target_port');
  assert.equal(renderInline('`**not bold**`'), '<code>**not bold**</code>');
  assert.equal(renderInline('2 * 3 * 4'), '2 * 3 * 4');
});

test('blocks: paragraphs, lists, fenced code and pipe tables', () => {
  const html = renderMarkdown(
    [
      'First line',
      'continues here.',
      '',
      '- one',
      '- two `x`',
      '',
      '1. first',
      '2. second',
      '',
      '```',
      'a < b',
      '```',
      '',
      '| code | status |',
      '|---|---|',
      '| `not_found` | 404 |',
      '| a \\| b | 1 |',
    ].join('\n'),
  );
  assert.equal(
    html,
    [
      '<p>First line continues here.</p>',
      '<ul><li>one</li><li>two <code>x</code></li></ul>',
      '<ol><li>first</li><li>second</li></ol>',
      '<pre><code>a &lt; b</code></pre>',
      '<table><thead><tr><th>code</th><th>status</th></tr></thead><tbody>' +
        '<tr><td><code>not_found</code></td><td>404</td></tr><tr><td>a | b</td><td>1</td></tr></tbody></table>',
    ].join('\n'),
  );
});

test('escapeHtml escapes the five HTML-significant characters', () => {
  assert.equal(
    escapeHtml(`<a href="x" title='y'>&</a>`),
    '&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;',
  );
});
