import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { engineCandidates, findEngine } from '../../../src/dataplane/runtime/detect.js';
import { FrameDemuxer } from '../../../src/dataplane/runtime/docker/demux.js';
import {
  bindsFor,
  outboundPolicy,
  resolvePermissionProfile,
} from '../../../src/dataplane/runtime/docker/profile.js';
import { PullProgress } from '../../../src/dataplane/runtime/docker/pull-progress.js';
import { isSkepError } from '../../../src/shared/index.js';

const frame = (type: number, text: string) => {
  const payload = Buffer.from(text);
  const header = Buffer.alloc(8);
  header[0] = type;
  header.writeUInt32BE(payload.length, 4);
  return Buffer.concat([header, payload]);
};

test('demux: 8-byte-header frames split across chunks give the raw stdout bytes and stderr apart', () => {
  const out: string[] = [];
  const err: string[] = [];
  const demuxer = new FrameDemuxer((stream, payload) =>
    (stream === 'stdout' ? out : err).push(payload.toString()),
  );
  const all = Buffer.concat([frame(1, '{"jsonrpc":"2.0",'), frame(2, 'log line\n'), frame(1, '"id":1}\n')]);
  for (let i = 0; i < all.length; i += 5) demuxer.push(all.subarray(i, i + 5));
  assert.equal(out.join(''), '{"jsonrpc":"2.0","id":1}\n');
  assert.deepEqual(err, ['log line\n']);
  assert.equal(demuxer.pendingBytes, 0);
});

test('pull progress: bytes of all layers aggregate into one percentage; done layers count fully', () => {
  const p = new PullProgress();
  assert.equal(p.percent(), 0);
  p.add({ status: 'Pulling from library/x', id: 'latest' });
  p.add({ status: 'Pulling fs layer', id: 'a' });
  p.add({ status: 'Pulling fs layer', id: 'b' });
  p.add({ status: 'Downloading', id: 'a', progressDetail: { current: 50, total: 100 } });
  p.add({ status: 'Downloading', id: 'b', progressDetail: { current: 0, total: 300 } });
  assert.equal(p.percent(), 12); // 50 / 400
  p.add({ status: 'Download complete', id: 'a' });
  p.add({ status: 'Downloading', id: 'b', progressDetail: { current: 150, total: 300 } });
  assert.equal(p.percent(), 62); // 250 / 400
  p.add({ status: 'Pull complete', id: 'b' });
  assert.equal(p.percent(), 100);
  assert.equal(
    p.add({ error: 'manifest unknown', errorDetail: { message: 'manifest unknown: x' } }),
    'manifest unknown: x',
  );
});

test('PermissionProfile: built-in none/network, default network, file profiles, binds', (t) => {
  assert.equal(outboundPolicy(resolvePermissionProfile(undefined)).allowAll, true);
  assert.equal(outboundPolicy(resolvePermissionProfile({})).allowAll, true);
  assert.deepEqual(outboundPolicy(resolvePermissionProfile({}, 'none')), {
    allowAll: false,
    hosts: [],
    ports: [],
  });
  assert.equal(outboundPolicy(resolvePermissionProfile({ name: 'none' })).allowAll, false);
  const custom = resolvePermissionProfile({
    network: { outbound: { allow_host: ['.example.com'], allow_port: [443] } },
  });
  assert.deepEqual(outboundPolicy(custom), { allowAll: false, hosts: ['.example.com'], ports: [443] });
  const dir = mkdtempSync(join(tmpdir(), 'skep-profile-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'p.json'), JSON.stringify({ write: ['/srv/data'] }));
  assert.deepEqual(resolvePermissionProfile(undefined, join(dir, 'p.json')).write, ['/srv/data']);
  assert.throws(
    () => resolvePermissionProfile(undefined, 'relative.json'),
    (e) => isSkepError(e) && e.code === 'invalid_config',
  );
  assert.deepEqual(bindsFor({ read: ['/a', '/b:/in/b'], write: ['/c:/in/c'] }, ['/d:/in/d:ro']), [
    '/a:/a:ro',
    '/b:/in/b:ro',
    '/c:/in/c:rw',
    '/d:/in/d:ro',
  ]);
  assert.throws(
    () => bindsFor({ read: ['relative/path'] }),
    (e) => isSkepError(e) && /absolute/.test(e.message),
  );
});

test('socket discovery: DOCKER_HOST, then the current docker context, then the well-known sockets in order', (t) => {
  const home = mkdtempSync(join(tmpdir(), 'skep-home-'));
  t.after(() => rmSync(home, { recursive: true, force: true }));
  const meta = join(home, '.docker', 'contexts', 'meta', createHash('sha256').update('colima').digest('hex'));
  mkdirSync(meta, { recursive: true });
  writeFileSync(join(home, '.docker', 'config.json'), JSON.stringify({ currentContext: 'colima' }));
  writeFileSync(
    join(meta, 'meta.json'),
    JSON.stringify({ Name: 'colima', Endpoints: { docker: { Host: 'unix:///ctx.sock' } } }),
  );
  const hosts = engineCandidates(
    { DOCKER_HOST: 'tcp://10.0.0.1:2375', XDG_RUNTIME_DIR: '/run/user/7' },
    home,
  ).map((c) => c.host);
  assert.deepEqual(hosts, [
    'tcp://10.0.0.1:2375',
    'unix:///ctx.sock',
    'unix:///var/run/docker.sock',
    `unix://${home}/.docker/desktop/docker.sock`,
    'unix:///run/podman/podman.sock',
    'unix:///run/user/7/podman/podman.sock',
    `unix://${home}/.colima/default/docker.sock`,
    `unix://${home}/.rd/docker.sock`,
    `unix://${home}/.orbstack/run/docker.sock`,
  ]);
  // The implicit default context adds nothing.
  writeFileSync(join(home, '.docker', 'config.json'), JSON.stringify({ currentContext: 'default' }));
  assert.equal(engineCandidates({}, home)[0]?.host, 'unix:///var/run/docker.sock');
});

test('socket discovery: sockets that do not exist are skipped; nothing answering → undefined', async () => {
  assert.equal(await findEngine([{ source: 'x', host: 'unix:///nonexistent/skep/docker.sock' }]), undefined);
});

test('skep run progress bar: pull contexts become a bar, other contexts pass through', async () => {
  const { progressLine } = await import('../../../src/control/cli/pull-progress.js');
  assert.equal(
    progressLine('pulling image ghcr.io/x/y:1: 40%'),
    `pulling ghcr.io/x/y:1 [${'#'.repeat(12)}${'.'.repeat(18)}] 40%`,
  );
  assert.equal(progressLine('pulling image a: 100%'), `pulling a [${'#'.repeat(30)}] 100%`);
  assert.equal(
    progressLine('server exited (code 1); restarting in 1s'),
    'server exited (code 1); restarting in 1s',
  );
});
