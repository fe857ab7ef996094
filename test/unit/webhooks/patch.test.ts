import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  applyPatch,
  checkPatch,
  decodePatch,
  PatchError,
  parsePointer,
} from '../../../src/dataplane/middleware/webhooks/runtime.js';

/** Decodes, checks nothing about scope, applies: RFC 6902's own examples use any path. */
function apply(doc: unknown, patch: unknown): unknown {
  return applyPatch(doc, decodePatch(patch));
}

function failsWith(kind: PatchError['kind'], fn: () => unknown, pattern?: RegExp): void {
  assert.throws(fn, (err) => {
    assert.ok(err instanceof PatchError, String(err));
    assert.equal(err.kind, kind);
    // A webhook (an upstream service) answered with a patch that cannot be used.
    assert.equal(err.code, 'bad_gateway');
    if (pattern !== undefined) assert.match(err.message, pattern);
    return true;
  });
}

test('RFC 6902 A.1/A.2/A.3: add an object member, insert into an array, remove a member', () => {
  assert.deepEqual(apply({ foo: 'bar' }, [{ op: 'add', path: '/baz', value: 'qux' }]), {
    foo: 'bar',
    baz: 'qux',
  });
  assert.deepEqual(apply({ foo: ['bar', 'baz'] }, [{ op: 'add', path: '/foo/1', value: 'qux' }]), {
    foo: ['bar', 'qux', 'baz'],
  });
  assert.deepEqual(apply({ baz: 'qux', foo: 'bar' }, [{ op: 'remove', path: '/baz' }]), { foo: 'bar' });
});

test('RFC 6902 A.4/A.5: remove an array element, replace a value', () => {
  assert.deepEqual(apply({ foo: ['bar', 'qux', 'baz'] }, [{ op: 'remove', path: '/foo/1' }]), {
    foo: ['bar', 'baz'],
  });
  assert.deepEqual(apply({ baz: 'qux', foo: 'bar' }, [{ op: 'replace', path: '/baz', value: 'boo' }]), {
    baz: 'boo',
    foo: 'bar',
  });
});

test('RFC 6902 A.6/A.7: move a value, move an array element', () => {
  assert.deepEqual(
    apply({ foo: { bar: 'baz', waldo: 'fred' }, qux: { corge: 'grault' } }, [
      { op: 'move', from: '/foo/waldo', path: '/qux/thud' },
    ]),
    { foo: { bar: 'baz' }, qux: { corge: 'grault', thud: 'fred' } },
  );
  assert.deepEqual(
    apply({ foo: ['all', 'grass', 'cows', 'eat'] }, [{ op: 'move', from: '/foo/1', path: '/foo/3' }]),
    {
      foo: ['all', 'cows', 'eat', 'grass'],
    },
  );
});

test('RFC 6902 A.8/A.9/A.14: test success, test failure, ~ escapes', () => {
  const doc = { baz: 'qux', foo: ['a', 2, 'c'] };
  assert.deepEqual(
    apply(doc, [
      { op: 'test', path: '/baz', value: 'qux' },
      { op: 'test', path: '/foo/1', value: 2 },
    ]),
    doc,
  );
  failsWith(
    'apply',
    () => apply({ baz: 'qux' }, [{ op: 'test', path: '/baz', value: 'bar' }]),
    /test failed at \/baz/,
  );
  assert.deepEqual(apply({ '/': 9, '~1': 10 }, [{ op: 'test', path: '/~01', value: 10 }]), {
    '/': 9,
    '~1': 10,
  });
  assert.deepEqual(parsePointer('/a~1b/c~0d'), ['a/b', 'c~d']);
});

test('RFC 6902 A.10/A.16/A.12: add a nested member, append with "-", adding to a missing parent fails', () => {
  assert.deepEqual(apply({ foo: 'bar' }, [{ op: 'add', path: '/child', value: { grandchild: {} } }]), {
    foo: 'bar',
    child: { grandchild: {} },
  });
  assert.deepEqual(apply({ foo: ['bar'] }, [{ op: 'add', path: '/foo/-', value: ['abc', 'def'] }]), {
    foo: ['bar', ['abc', 'def']],
  });
  failsWith(
    'apply',
    () => apply({ foo: 'bar' }, [{ op: 'add', path: '/baz/bat', value: 'qux' }]),
    /does not exist/,
  );
});

test('RFC 6902 §4.5 copy, and §4.6 test compares objects regardless of member order', () => {
  assert.deepEqual(apply({ a: { b: [1] } }, [{ op: 'copy', from: '/a', path: '/c' }]), {
    a: { b: [1] },
    c: { b: [1] },
  });
  const copied = apply({ a: { b: [1] } }, [{ op: 'copy', from: '/a', path: '/c' }]) as {
    a: { b: number[] };
    c: unknown;
  };
  copied.a.b.push(2);
  assert.deepEqual(copied.c, { b: [1] }, 'a copy is not shared with its source');
  assert.doesNotThrow(() =>
    apply({ o: { x: 1, y: [1, 2] } }, [{ op: 'test', path: '/o', value: { y: [1, 2], x: 1 } }]),
  );
  failsWith('apply', () => apply({ o: [1, 2] }, [{ op: 'test', path: '/o', value: [2, 1] }]));
});

test('RFC 6902 §4: targets that do not exist, bad indexes and moving into a child fail to apply', () => {
  failsWith('apply', () => apply({ a: 1 }, [{ op: 'remove', path: '/b' }]));
  failsWith('apply', () => apply({ a: 1 }, [{ op: 'replace', path: '/b', value: 2 }]));
  failsWith('apply', () => apply({ a: [1] }, [{ op: 'add', path: '/a/2', value: 2 }]), /out of range/);
  failsWith('apply', () => apply({ a: [1] }, [{ op: 'remove', path: '/a/01' }]), /not an array index/);
  failsWith(
    'apply',
    () => apply({ a: [1] }, [{ op: 'replace', path: '/a/-', value: 0 }]),
    /not an array index/,
  );
  failsWith(
    'apply',
    () => apply({ a: { b: {} } }, [{ op: 'move', from: '/a', path: '/a/b/c' }]),
    /own child/,
  );
  failsWith('apply', () => apply({ a: 1 }, [{ op: 'copy', from: '/zz', path: '/b' }]));
});

test('RFC 6902 §5: a failing operation leaves the document untouched (all or nothing)', () => {
  const doc = { a: 1, list: [1, 2] };
  failsWith('apply', () =>
    apply(doc, [
      { op: 'replace', path: '/a', value: 2 },
      { op: 'remove', path: '/list/0' },
      { op: 'test', path: '/a', value: 99 },
    ]),
  );
  assert.deepEqual(doc, { a: 1, list: [1, 2] });
});

test('a member named __proto__ is a member, never the prototype', () => {
  const out = apply({ a: {} }, [{ op: 'add', path: '/a/__proto__', value: { polluted: true } }]) as {
    a: Record<string, unknown>;
  };
  assert.equal(Object.getPrototypeOf(out.a), Object.prototype);
  assert.deepEqual(JSON.parse(JSON.stringify(out.a)), JSON.parse('{"__proto__":{"polluted":true}}'));
  assert.equal(({} as Record<string, unknown>)['polluted'], undefined);
});

test('malformed: not an array, an element not an object, op/path/from not strings', () => {
  failsWith('malformed', () => decodePatch({ op: 'add' }), /not a JSON array/);
  failsWith('malformed', () => decodePatch(['add']), /patch\[0\] is not an object/);
  failsWith('malformed', () => decodePatch([{ op: 1, path: '/mcp_request/x' }]), /patch\[0\]\.op/);
  failsWith('malformed', () => decodePatch([{ op: 'remove', path: ['x'] }]), /patch\[0\]\.path/);
  failsWith(
    'malformed',
    () => decodePatch([{ op: 'move', path: '/mcp_request/a', from: 2 }]),
    /patch\[0\]\.from/,
  );
});

test('invalid: an unknown op, a missing path, copy/move without from, add/replace/test without value', () => {
  const check = (patch: unknown) => () => checkPatch(decodePatch(patch));
  failsWith('invalid', check([{ op: 'merge', path: '/mcp_request/a', value: 1 }]), /unsupported op "merge"/);
  failsWith('invalid', check([{ op: 'remove' }]), /path is required/);
  failsWith('invalid', check([{ op: 'copy', path: '/mcp_request/a' }]), /copy requires "from"/);
  failsWith('invalid', check([{ op: 'move', path: '/mcp_request/a', from: '' }]), /move requires "from"/);
  for (const op of ['add', 'replace', 'test'])
    failsWith('invalid', check([{ op, path: '/mcp_request/a' }]), new RegExp(`${op} requires "value"`));
  assert.doesNotThrow(check([{ op: 'add', path: '/mcp_request/a', value: null }]), 'null is a value');
});

test('scope: every path, and the from of copy/move, starts with /mcp_request/', () => {
  const check = (patch: unknown) => () => checkPatch(decodePatch(patch));
  failsWith(
    'scope',
    check([{ op: 'replace', path: '/principal/sub', value: 'admin' }]),
    /outside \/mcp_request\//,
  );
  failsWith('scope', check([{ op: 'replace', path: '/mcp_request', value: {} }]), /outside/);
  failsWith('scope', check([{ op: 'remove', path: '/mcp_requests/x' }]), /outside/);
  failsWith(
    'scope',
    check([{ op: 'copy', from: '/context/source_ip', path: '/mcp_request/params/ip' }]),
    /from/,
  );
  failsWith('scope', check([{ op: 'move', from: '/principal', path: '/mcp_request/params/p' }]), /from/);
  assert.doesNotThrow(
    check([
      { op: 'add', path: '/mcp_request/params/arguments/x', value: 1 },
      { op: 'move', from: '/mcp_request/params/a', path: '/mcp_request/params/b' },
      // `from` is not read for other ops, as in the reference.
      { op: 'remove', path: '/mcp_request/params/c', from: '/principal' },
    ]),
  );
});

test('the envelope: a scoped patch changes the request only', () => {
  const request = {
    jsonrpc: '2.0',
    id: 7,
    method: 'tools/call',
    params: { name: 'echo', arguments: { message: 'hi' } },
  };
  const ops = decodePatch([
    { op: 'test', path: '/mcp_request/params/name', value: 'echo' },
    { op: 'replace', path: '/mcp_request/params/arguments/message', value: 'patched' },
    { op: 'add', path: '/mcp_request/params/arguments/extra', value: [1] },
  ]);
  checkPatch(ops);
  const out = applyPatch({ mcp_request: request }, ops);
  assert.deepEqual(out.mcp_request, {
    jsonrpc: '2.0',
    id: 7,
    method: 'tools/call',
    params: { name: 'echo', arguments: { message: 'patched', extra: [1] } },
  });
  assert.equal(request.params.arguments.message, 'hi', 'the input is not changed');
});
