/** The authorization server's browser cookies (against a confused deputy): names, attributes, flows. */
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { test } from 'node:test';
import { BrowserCookies, MAX_FLOWS } from '../../../src/authserver/cookies.js';

const req = (cookie?: string) => ({ headers: cookie === undefined ? {} : { cookie } }) as IncomingMessage;
const id = (n: number) => `flow${String(n).padStart(12, '0')}`;
const secret = (n: number) => `s${String(n).padStart(42, '0')}`;

/** The cookie's value as the browser would send it back. */
const echo = (setCookie: string) => setCookie.slice(0, setCookie.indexOf(';'));

test('http issuer: cookies scoped to the OAuth endpoints’ path, HttpOnly, SameSite=Lax, not Secure; names carry the issuer', () => {
  const a = new BrowserCookies('http://127.0.0.1:8080', 'http://127.0.0.1:8080/oauth/authorize');
  const b = new BrowserCookies('http://127.0.0.1:8081', 'http://127.0.0.1:8081/oauth/authorize');
  assert.match(a.flowName, /^skep_flow_[0-9a-f]{8}$/);
  assert.notEqual(a.flowName, b.flowName, 'two servers on one host name (cookies ignore ports) keep apart');
  assert.equal(a.path, '/oauth');
  const set = a.withFlow(req(), { id: id(1), secret: secret(1) }, 600);
  assert.equal(set, `${a.flowName}=${id(1)}:${secret(1)}; Max-Age=600; Path=/oauth; HttpOnly; SameSite=Lax`);
  const behindPrefix = new BrowserCookies('http://h/x', 'http://h/x/oauth/authorize');
  assert.equal(behindPrefix.path, '/x/oauth');
});

test('https authorization endpoint: __Host- prefix, Path=/, Secure (RFC 6265bis §4.1.3.2)', () => {
  const c = new BrowserCookies('https://mcp.example', 'https://login.example/oauth/authorize');
  assert.match(c.flowName, /^__Host-skep_flow_/);
  assert.match(c.rememberName, /^__Host-skep_consent_/);
  assert.match(c.remember(secret(1), 60), /; Path=\/; HttpOnly; SameSite=Lax; Secure$/);
});

test(`flow entries: at most ${MAX_FLOWS} kept (newest first), one replaced in place, removed one by one; garbage ignored`, () => {
  const c = new BrowserCookies('http://h', 'http://h/oauth/authorize');
  let cookie = '';
  for (let n = 1; n <= MAX_FLOWS + 2; n++) {
    cookie = echo(c.withFlow(req(cookie), { id: id(n), secret: secret(n) }, 600));
  }
  const kept = c.flows(req(cookie)).map((e) => e.id);
  assert.equal(kept.length, MAX_FLOWS);
  assert.equal(kept[0], id(MAX_FLOWS + 2));
  assert.ok(!kept.includes(id(1)) && !kept.includes(id(2)), 'the oldest fell out');
  cookie = echo(c.withFlow(req(cookie), { id: id(5), secret: secret(99) }, 600));
  assert.equal(c.flowSecret(req(cookie), id(5)), secret(99), 'rotated');
  assert.equal(c.flows(req(cookie)).length, MAX_FLOWS);
  cookie = echo(c.withoutFlow(req(cookie), id(5), 600));
  assert.equal(c.flowSecret(req(cookie), id(5)), undefined);
  let last = '';
  for (const e of c.flows(req(cookie)))
    last = c.withoutFlow(req(`${c.flowName}=${e.id}:${e.secret}`), e.id, 600);
  assert.match(last, /=; Max-Age=0; Expires=Thu, 01 Jan 1970/, 'the last entry clears the cookie');

  const junk = `${c.flowName}=short:x.${id(1)}:${secret(1)}.${id(2)}:bad value; other=1; ${c.flowName}=${id(3)}:${secret(3)}`;
  assert.deepEqual(
    c.flows(req(junk)).map((e) => e.id),
    [id(1), id(3)],
    'malformed entries are skipped; every cookie of the name is read',
  );
  assert.deepEqual(c.flows(req()), []);
});
