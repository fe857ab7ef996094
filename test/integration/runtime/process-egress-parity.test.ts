/**
 * One allow rule for both egress proxies: the container egress script (`EGRESS_PROXY_SCRIPT`,
 * plain JavaScript that runs inside a container) and the sandbox's filtering proxy
 * (`egressAllows`, in the runner) must decide every destination alike. The script runs here as
 * a real `node -e` process on a loopback port; a refusal is its 403, anything else (it tries
 * to connect) counts as allowed. Hosts are under `.invalid` (RFC 2606), so nothing leaves.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { test } from 'node:test';
import {
  EGRESS_CONFIG_ENV,
  EGRESS_PROXY_SCRIPT,
} from '../../../src/dataplane/runtime/egress/egress-script.js';
import { egressAllows } from '../../../src/dataplane/runtime/sandbox/egress-proxy.js';
import { freePort } from '../../helpers/net.js';
import { waitFor } from '../../helpers/wait.js';

function connectStatus(proxyPort: number, target: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: '127.0.0.1',
      port: proxyPort,
      method: 'CONNECT',
      path: target,
      timeout: 10_000,
    });
    req.on('connect', (res, socket) => {
      socket.destroy();
      resolve(res.statusCode ?? 0);
    });
    req.on('response', (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

test(
  'the container egress script and the sandbox proxy allow exactly the same destinations',
  { timeout: 60_000 },
  async (t) => {
    const rules = { hosts: ['api.skep.invalid', '.zone.invalid', '*.star.invalid'], ports: [443, 8443] };
    const port = await freePort();
    const child = spawn(process.execPath, ['-e', EGRESS_PROXY_SCRIPT], {
      env: {
        PATH: process.env['PATH'] ?? '',
        [EGRESS_CONFIG_ENV]: JSON.stringify({
          proxyPort: port,
          allowHosts: rules.hosts,
          allowPorts: rules.ports,
        }),
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    t.after(() => child.kill('SIGKILL'));
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    await waitFor(
      'the egress script to listen',
      () => out.includes('egress proxy listening') || undefined,
      20_000,
    );

    const cases: [string, number][] = [
      ['api.skep.invalid', 443],
      ['API.Skep.Invalid', 8443],
      ['api.skep.invalid', 80],
      ['other.skep.invalid', 443],
      ['zone.invalid', 443],
      ['a.b.zone.invalid', 8443],
      ['evilzone.invalid', 443],
      ['x.star.invalid', 443],
      ['star.invalid', 443],
    ];
    for (const [host, p] of cases) {
      const status = await connectStatus(port, `${host}:${p}`);
      assert.equal(status !== 403, egressAllows(rules, host, p), `${host}:${p} (script answered ${status})`);
    }
  },
);
