import assert from 'node:assert/strict';
import { test } from 'node:test';
import { baseNameFor, workloadNameProblem } from '../../../src/workloads/index.js';

test('workload names allow letters, digits, dot, underscore, dash', () => {
  for (const ok of ['fetch', 'My.Server_2-x', 'a', 'x'.repeat(100)])
    assert.equal(workloadNameProblem(ok), undefined, ok);
});

test('empty, long, traversal, shell and other characters are rejected', () => {
  for (const bad of [
    '',
    'x'.repeat(101),
    '..',
    'a..b',
    'a/b',
    'a b',
    'a;b',
    'a$b',
    'a|b',
    'a`b',
    'a&b',
    'a\0b',
    'ü',
  ]) {
    assert.notEqual(workloadNameProblem(bad), undefined, JSON.stringify(bad));
  }
});

test('derived names drop scheme, scope, version, tag and extension', () => {
  assert.equal(baseNameFor('npx://@modelcontextprotocol/server-everything@1.2.3'), 'server-everything');
  assert.equal(baseNameFor('npx://fetch-mcp'), 'fetch-mcp');
  assert.equal(baseNameFor('uvx://mcp-server-fetch==1.0'), 'mcp-server-fetch');
  assert.equal(baseNameFor('cmd:///usr/local/bin/my-server'), 'my-server');
  assert.equal(baseNameFor('cmd:///srv/server.js'), 'server');
  assert.equal(baseNameFor('ghcr.io/org/fetch:latest'), 'fetch');
  assert.equal(baseNameFor('https://example.com/mcp'), 'mcp');
  assert.equal(workloadNameProblem(baseNameFor('cmd:///weird/na me$;.sh')), undefined);
});
