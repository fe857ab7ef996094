/**
 * ToolHive's PermissionProfile `network.inbound.allow_host` on a process workload: the workload's
 * proxy accepts those Host names (and loopback names) and refuses any other, whatever the
 * runtime. (Container workloads are also checked by the egress container: runtime tests.)
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { test } from 'node:test';
import { everythingBody, waitForStatus, workloadApp } from '../workloads/helpers.js';

function statusWithHost(port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path: '/health', method: 'GET', headers: { host } },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

test('PermissionProfile network.inbound.allow_host: listed names pass, others get 403', async (t) => {
  const { ctx } = await workloadApp(t);
  const created = await ctx.workloads.create({
    ...everythingBody('inbound-hosts'),
    permission_profile: { network: { inbound: { allow_host: ['mcp.example.test'] } } },
  });
  await waitForStatus(ctx, 'inbound-hosts', 'running');
  assert.equal(await statusWithHost(created.port, `mcp.example.test:${created.port}`), 200);
  assert.equal(await statusWithHost(created.port, `localhost:${created.port}`), 200);
  assert.equal(await statusWithHost(created.port, `evil.example.test:${created.port}`), 403);
});
