import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  explainStartFailure,
  isFailedAttempt,
  lastAttemptLines,
} from '../../../src/control/cli/start-failure.js';

const WENT_AWAY =
  'server failed to start: server went away during initialize: server output ended; restarting in 1s (attempt 1/10)';

test('a failed attempt is one the runner will retry', () => {
  assert.equal(isFailedAttempt(WENT_AWAY), true);
  assert.equal(isFailedAttempt('the remote server is unreachable: x; retrying in 2s (attempt 1)'), true);
  assert.equal(isFailedAttempt('pulling image x: 40%'), false);
  assert.equal(isFailedAttempt(''), false);
});

test('only the last start’s lines count, without Skep’s own lines and npm notices', () => {
  const log = [
    '[skep] not sandboxed: off',
    'old failure',
    '[skep] sandboxed with bubblewrap (network: host)',
    'npm notice New minor version of npm available!',
    '',
    'new failure',
    '[skep] relay: something',
  ].join('\n');
  assert.deepEqual(lastAttemptLines(log), ['new failure']);
});

test('npm E404: the package that is missing', () => {
  const log = [
    '[skep] sandboxed with bubblewrap (network: host)',
    'npm error code E404',
    'npm error 404 Not Found - GET https://registry.npmjs.org/@x%2fnope',
    'npm error 404',
    "npm error 404  The requested resource '@x/nope@*' could not be found or you do not have permission to access it.",
    'npm error A complete log of this run can be found in: /root/.npm/_logs/x.log',
  ].join('\n');
  const f = explainStartFailure(WENT_AWAY, log, false);
  assert.equal(f.summary, "npm error E404: package '@x/nope' is not in the npm registry");
  assert.deepEqual(f.evidence, [
    'npm error code E404',
    'npm error 404 Not Found - GET https://registry.npmjs.org/@x%2fnope',
    "npm error 404  The requested resource '@x/nope@*' could not be found or you do not have permission to access it.",
  ]);
  assert.match(f.hint ?? '', /check the package name after npx:\/\//);
});

test('npm offline: the network error and what to check', () => {
  const log = [
    '[skep] not sandboxed: off',
    'npm error code ENOTFOUND',
    'npm error syscall getaddrinfo',
    'npm error errno ENOTFOUND',
    'npm error network request to https://registry.npmjs.org/pkg failed, reason: getaddrinfo ENOTFOUND registry.npmjs.org',
  ].join('\n');
  const f = explainStartFailure(WENT_AWAY, log, false);
  assert.equal(
    f.summary,
    'npm error ENOTFOUND: network request to https://registry.npmjs.org/pkg failed, reason: getaddrinfo ENOTFOUND registry.npmjs.org',
  );
  assert.match(f.hint ?? '', /check the network connection/);
});

test('a program that exits: its last words lead; the proxy’s view otherwise', () => {
  const log = [
    '[skep] not sandboxed: off',
    'Traceback (most recent call last):',
    '  File "x.py"',
    "ModuleNotFoundError: No module named 'mcp'",
  ].join('\n');
  assert.equal(
    explainStartFailure(WENT_AWAY, log, false).summary,
    "the server exited before it answered the MCP initialize request: ModuleNotFoundError: No module named 'mcp'",
  );
  assert.equal(
    explainStartFailure(WENT_AWAY, '', false).summary,
    'the server exited before it answered the MCP initialize request',
  );
});

test('not an MCP server: echoes, answers without a protocol version, or stays silent', () => {
  const echo = explainStartFailure(
    'server failed to start: server initialize failed: no connected client can answer initialize; restarting in 1s (attempt 1/10)',
    '',
    false,
  );
  assert.equal(
    echo.summary,
    'the program is not an MCP server: it sent the MCP initialize request back instead of answering it',
  );
  assert.match(echo.hint ?? '', /speaks MCP on stdin\/stdout/);
  assert.equal(
    explainStartFailure(
      'server failed to start: server initialize failed: initialize timed out; restarting in 1s (attempt 1/10)',
      '',
      false,
    ).summary,
    'the program did not answer the MCP initialize request in time',
  );
  assert.equal(
    explainStartFailure(
      'server failed to start: server initialize failed: Method not found; restarting in 1s (attempt 1/10)',
      '',
      false,
    ).summary,
    'the server refused the MCP initialize request: Method not found',
  );
});

test('a remote failure is the runner’s own words, without the retry note', () => {
  const f = explainStartFailure(
    'the remote server is unreachable: nothing accepts connections at 127.0.0.1:9 (ECONNREFUSED); check the URL and that the server is running; retrying in 1s (attempt 1)',
    'ignored',
    true,
  );
  assert.equal(
    f.summary,
    'the remote server is unreachable: nothing accepts connections at 127.0.0.1:9 (ECONNREFUSED); check the URL and that the server is running',
  );
  assert.deepEqual(f.evidence, []);
});

test('a container pull failure (status error) is shown as recorded', () => {
  const f = explainStartFailure(
    'server failed to start: cannot pull image ghcr.io/x/y:1: manifest unknown; gave up after 10 restarts',
    '',
    false,
  );
  assert.equal(f.summary, 'cannot pull image ghcr.io/x/y:1: manifest unknown');
});
