/**
 * The sandbox's rules as pure functions (docs/sandbox.md): selection (`chooseSandbox`, with a fixed
 * probe), the bwrap command line, the folders hidden and shown, the egress allow rule.
 */
import assert from 'node:assert/strict';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import {
  argumentMounts,
  bwrapArgs,
  checkProfileBinds,
  hiddenAgain,
  hiddenDirs,
  profileMounts,
  projectRoot,
} from '../../../src/dataplane/runtime/sandbox/bwrap-args.js';
import { sandboxNetwork } from '../../../src/dataplane/runtime/sandbox/bwrap-sandbox.js';
import { egressAllows, egressVerdict } from '../../../src/dataplane/runtime/sandbox/egress-proxy.js';
import {
  NODE_RELAY_CONFIG_ENV,
  relayLaunch,
  relayProgram,
} from '../../../src/dataplane/runtime/sandbox/forwarder.js';
import {
  createHiddenDirs,
  hiddenPathsOf,
  resolvedPath,
  sandboxRunDir,
} from '../../../src/dataplane/runtime/sandbox/hidden-paths.js';
import { chooseSandbox, isolationDemand } from '../../../src/dataplane/runtime/sandbox/select.js';
import { isSkepError } from '../../../src/shared/index.js';

const works = () => ({ ok: true as const, path: '/usr/bin/bwrap' });
const missing = () => ({ ok: false as const, reason: 'bwrap is not installed (not found on PATH)' });

function tempDir(t: TestContext): string {
  // Real path: the expectations below compare with resolved paths.
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'skep-sbx-unit-')));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('what a profile asks for', () => {
  assert.equal(isolationDemand(undefined, undefined, true), undefined, 'no profile: the built-in network');
  assert.equal(isolationDemand({ name: 'network' }, undefined, true), undefined);
  assert.match(isolationDemand({}, 'none', true) ?? '', /no outbound network/);
  assert.match(isolationDemand({ network: { mode: 'none' } }, undefined, true) ?? '', /network.mode none/);
  const allowList = { network: { outbound: { allow_host: ['api.example.com'] } } };
  assert.match(isolationDemand(allowList, undefined, true) ?? '', /allow-list/);
  assert.equal(isolationDemand(allowList, undefined, false), undefined, 'isolate_network false');
  assert.match(isolationDemand({ read: ['/data'] }, undefined, true) ?? '', /read\/write paths/);
});

test('auto sandboxes when bwrap works; without it, only a profile that asks for nothing runs (and says why)', () => {
  assert.deepEqual(chooseSandbox({ setting: 'auto', isolateNetwork: true, probe: works }), {
    sandboxed: true,
    binary: '/usr/bin/bwrap',
  });
  const plain = chooseSandbox({ setting: 'auto', isolateNetwork: true, probe: missing });
  assert.equal(plain.sandboxed, false);
  assert.match(plain.sandboxed ? '' : plain.reason, /not installed/);
  assert.throws(
    () =>
      chooseSandbox({
        setting: 'auto',
        profile: { network: { mode: 'none' } },
        isolateNetwork: true,
        probe: missing,
      }),
    (e) => isSkepError(e) && e.code === 'sandbox_unavailable' && /apt install bubblewrap/.test(e.message),
  );
});

test('bwrap or a path is required; off refuses isolation unless the workload opts out', () => {
  assert.throws(
    () => chooseSandbox({ setting: '/opt/missing/bwrap', isolateNetwork: true, probe: missing }),
    (e) =>
      isSkepError(e) &&
      e.code === 'sandbox_unavailable' &&
      /runtime.sandbox is \/opt\/missing\/bwrap/.test(e.message),
  );
  assert.throws(
    () => chooseSandbox({ setting: 'auto', override: 'bwrap', isolateNetwork: true, probe: missing }),
    (e) => isSkepError(e) && /the workload asks for the bwrap sandbox/.test(e.message),
  );
  assert.throws(
    () => chooseSandbox({ setting: 'off', profile: { write: ['/x'] }, isolateNetwork: true, probe: works }),
    (e) => isSkepError(e) && /runtime.sandbox is off/.test(e.message),
  );
  assert.deepEqual(chooseSandbox({ setting: 'off', isolateNetwork: true, probe: works }), {
    sandboxed: false,
    reason: 'runtime.sandbox is off',
  });
  const optOut = chooseSandbox({
    setting: 'bwrap',
    override: 'off',
    profile: { network: { mode: 'none' } },
    isolateNetwork: true,
    probe: missing,
  });
  assert.equal(optOut.sandboxed, false);
  // A workload may ask for the sandbox even when the config turns it off.
  assert.equal(
    chooseSandbox({ setting: 'off', override: 'bwrap', isolateNetwork: true, probe: works }).sandboxed,
    true,
  );
});

test('the network a profile gets', () => {
  assert.deepEqual(sandboxNetwork({}), { kind: 'host' });
  assert.deepEqual(sandboxNetwork({ permissionProfileName: 'none' }), { kind: 'none' });
  assert.deepEqual(sandboxNetwork({ permissionProfile: { network: { mode: 'none' } } }), { kind: 'none' });
  assert.deepEqual(
    sandboxNetwork({
      permissionProfile: { network: { outbound: { allow_host: ['a.example'], allow_port: [443] } } },
    }),
    { kind: 'filtered', rules: { hosts: ['a.example'], ports: [443] } },
  );
  assert.deepEqual(
    sandboxNetwork({
      permissionProfile: { network: { outbound: { allow_host: ['a.example'] } } },
      isolateNetwork: false,
    }),
    { kind: 'host' },
  );
});

test('the bwrap command line hides, then shows the home, programs and profile paths, in that order', () => {
  const args = bwrapArgs(
    {
      hide: ['/home', '/tmp'],
      home: { src: '/data/skep/sandbox/w/home', dest: '/home/u' },
      programs: [{ src: '/home/u/.nvm/versions/node/v20', dest: '/home/u/.nvm/versions/node/v20' }],
      readOnly: [{ src: '/home/u/docs', dest: '/home/u/docs' }],
      readWrite: [{ src: '/tmp/out', dest: '/tmp/out' }],
      rehide: ['/home/u/docs/skep'],
      cover: ['/srv/api/api.sock'],
      socketDir: '/tmp/skep-sbx-1',
      shareNetwork: false,
    },
    '/usr/bin/node',
    ['server.js'],
  );
  const text = args.join(' ');
  assert.ok(
    text.startsWith(
      '--ro-bind / / --dev /dev --proc /proc --tmpfs /home --tmpfs /tmp --bind /data/skep/sandbox/w/home /home/u',
    ),
  );
  assert.ok(text.indexOf('--ro-bind /home/u/.nvm') > text.indexOf('--bind /data/skep/sandbox/w/home'));
  // What a bind shows of the hidden paths is hidden again after every bind.
  assert.ok(
    text.includes(
      '--ro-bind /home/u/docs /home/u/docs --bind /tmp/out /tmp/out --tmpfs /home/u/docs/skep --ro-bind /dev/null /srv/api/api.sock',
    ),
  );
  assert.ok(text.includes('--bind /tmp/skep-sbx-1 /run/skep'));
  assert.ok(text.includes('--unshare-all --cap-drop ALL --new-session --die-with-parent --chdir /home/u'));
  assert.ok(!text.includes('--share-net'));
  assert.deepEqual(args.slice(-3), ['--', '/usr/bin/node', 'server.js']);
  // Secrets travel in the environment, never on the command line.
  assert.ok(!text.includes('--setenv'));
});

test('hidden folders: existing ones only, the outermost, parents first', (t) => {
  const dir = tempDir(t);
  mkdirSync(join(dir, 'a', 'b'), { recursive: true });
  assert.deepEqual(hiddenDirs([join(dir, 'a', 'b'), join(dir, 'a'), join(dir, 'missing')]), [join(dir, 'a')]);
});

test('a profile may not show Skep’s folders; Skep’s folders inside a shown path are hidden again', (t) => {
  const dir = tempDir(t);
  const skep = join(dir, 'skep');
  mkdirSync(join(skep, 'state'), { recursive: true });
  const hidden = { dirs: [skep], files: [] };
  assert.throws(
    () => profileMounts([`${join(skep, 'state')}:${join(skep, 'state')}:ro`], hidden, []),
    (e) => isSkepError(e) && e.code === 'invalid_config' && /Skep's own folder/.test(e.message),
  );
  const shown = profileMounts([`${dir}:${dir}:ro`], hidden, []);
  assert.deepEqual(shown.readOnly, [{ src: dir, dest: dir }]);
  assert.deepEqual(hiddenAgain(shown.readOnly, hidden, []), { rehide: [skep], cover: [] });
  assert.throws(
    () => profileMounts([`${join(dir, 'nope')}:${join(dir, 'nope')}:rw`], hidden, []),
    (e) => isSkepError(e) && /does not exist/.test(e.message),
  );
});

test('profile paths are resolved once: where a path really leads is what is checked and bound', (t) => {
  const dir = tempDir(t);
  const skep = join(dir, 'skep');
  mkdirSync(join(skep, 'state'), { recursive: true });
  mkdirSync(join(dir, 'real', 'docs'), { recursive: true });
  symlinkSync(dir, join(dir, 'up')); // a symlink to an ancestor of Skep's folders
  symlinkSync(join(skep, 'state'), join(dir, 'token-dir')); // a symlink into them
  symlinkSync(join(dir, 'real'), join(dir, 'home-link')); // like /home -> /var/home
  assert.equal(resolvedPath(join(dir, 'up', 'up', 'skep')), skep);
  // A path that does not exist is judged by where it would be created.
  assert.equal(resolvedPath(join(dir, 'token-dir', 'new', 'file')), join(skep, 'state', 'new', 'file'));
  // `..` after a symlink goes up from its target, as the kernel resolves it.
  assert.equal(resolvedPath(`${dir}/token-dir/../state`), join(skep, 'state'));
  assert.equal(resolvedPath(`/proc/self/root${dir}`), dir);
  const hidden = { dirs: [skep], files: [join(dir, 'api.sock')] };
  const refused = (path: string, why: RegExp) =>
    assert.throws(
      () => checkProfileBinds([`${path}:${path}:ro`], hidden),
      (e) => isSkepError(e) && e.code === 'invalid_config' && why.test(e.message),
      path,
    );
  refused(join(dir, 'token-dir'), /leads to .*state, which is inside Skep's own folder/);
  refused(join(dir, 'token-dir', 'not-yet'), /inside Skep's own folder/);
  refused(join(dir, 'up', 'skep', 'state'), /inside Skep's own folder/);
  refused(`${dir}/token-dir/../state`, /inside Skep's own folder/);
  refused(join(dir, 'api.sock'), /inside Skep's own folder .*api\.sock/);
  // /proc and /sys by name: their paths lead anywhere, whatever they resolve to now.
  refused(`/proc/self/root${dir}`, /in \/proc or \/sys/);
  refused(`/proc/self/root${skep}`, /in \/proc or \/sys|Skep's own folder/);
  refused('/sys/kernel', /in \/proc or \/sys/);
  refused('/dev/fd/0', /in \/proc or \/sys/);
  assert.throws(
    () => checkProfileBinds([`${dir}:/proc/sys:ro`], hidden),
    (e) => isSkepError(e) && /in \/proc or \/sys/.test(e.message),
  );
  // An ancestor through a symlink: bound by its real path, Skep's folders hidden again there.
  const up = profileMounts([`${join(dir, 'up')}:${join(dir, 'up')}:ro`], hidden, [dir]);
  assert.deepEqual(up.readOnly, [
    { src: dir, dest: dir },
    // The written path lies in a hidden folder (its symlink is not in the sandbox): shown there too.
    { src: dir, dest: join(dir, 'up') },
  ]);
  assert.deepEqual(hiddenAgain(up.readOnly, hidden, [dir]).rehide, [skep, join(dir, 'up', 'skep')]);
  // A symlinked path outside the hidden folders resolves in the sandbox as on the host.
  const docs = join(dir, 'home-link', 'docs');
  assert.deepEqual(profileMounts([`${docs}:${docs}:rw`], hidden, []).readWrite, [
    { src: join(dir, 'real', 'docs'), dest: join(dir, 'real', 'docs') },
  ]);
  // A container path of its own, outside the hidden folders, is resolved the same way.
  assert.deepEqual(profileMounts([`${join(dir, 'real')}:${docs}:ro`], hidden, []).readOnly, [
    { src: join(dir, 'real'), dest: join(dir, 'real', 'docs') },
  ]);
});

test('hidden paths: Skep’s folders, the relay folder and the API socket, made before the sandbox starts', (t) => {
  const dir = tempDir(t);
  const paths = {
    configDir: join(dir, 'c'),
    stateDir: join(dir, 's'),
    dataDir: join(dir, 'd'),
    cacheDir: join(dir, 'k'),
    discoveryFile: join(dir, 'server.json'),
  };
  const skepDirs = [paths.configDir, paths.stateDir, paths.dataDir, paths.cacheDir];
  const runDir = resolvedPath(sandboxRunDir());
  assert.deepEqual(hiddenPathsOf(paths), { dirs: [...skepDirs, runDir], files: [] });
  // A socket alone in its folder: the folder is hidden (a tmpfs outlives a new socket there).
  mkdirSync(join(dir, 'api'));
  writeFileSync(join(dir, 'api', 'api.sock'), '');
  writeFileSync(paths.discoveryFile, JSON.stringify({ url: `unix://${join(dir, 'api', 'api.sock')}` }));
  assert.deepEqual(hiddenPathsOf(paths).dirs.slice(-1), [join(dir, 'api')]);
  // Beside other files: the socket alone.
  writeFileSync(join(dir, 'api', 'notes.txt'), '');
  assert.deepEqual(hiddenPathsOf(paths).files, [join(dir, 'api', 'api.sock')]);
  // A TCP server has no socket to hide.
  writeFileSync(paths.discoveryFile, JSON.stringify({ url: 'http://127.0.0.1:8080' }));
  assert.deepEqual(hiddenPathsOf(paths).files, []);
  // Skep's folders that do not exist yet are made, private.
  const made = createHiddenDirs({ dirs: skepDirs, files: [] });
  assert.deepEqual(made.dirs, skepDirs);
  for (const d of skepDirs) assert.equal(statSync(d).mode & 0o777, 0o700, d);
  // Only what exists is hidden again, and a file is covered where the sandbox shows it.
  const sock = join(dir, 'api', 'api.sock');
  assert.deepEqual(
    hiddenAgain([{ src: dir, dest: '/data' }], { dirs: [...skepDirs, join(dir, 'gone')], files: [sock] }, [
      dir,
    ]),
    { rehide: ['/data/c', '/data/s', '/data/d', '/data/k'], cover: ['/data/api/api.sock'] },
  );
  assert.deepEqual(hiddenAgain([], { dirs: [], files: [sock] }, []), { rehide: [], cover: [sock] });
});

test('a cmd:// program file named in the arguments shows its project folder, never a home or Skep’s folders', (t) => {
  const dir = tempDir(t);
  const home = join(dir, 'home');
  const proj = join(home, 'proj');
  mkdirSync(join(proj, 'src'), { recursive: true });
  writeFileSync(join(proj, 'package.json'), '{}');
  writeFileSync(join(proj, 'src', 'server.js'), '');
  writeFileSync(join(home, 'loose.js'), '');
  mkdirSync(join(home, 'data'));
  symlinkSync(join(proj, 'src', 'server.js'), join(home, 'link.js'));
  assert.equal(projectRoot(join(proj, 'src', 'server.js')), proj);
  assert.equal(projectRoot('/srv/app/node_modules/@scope/pkg/dist/index.js'), '/srv/app');
  const mounts = argumentMounts(
    ['-e', join(proj, 'src', 'server.js'), join(home, 'loose.js'), join(home, 'data'), 'relative.js'],
    [dir],
    [home, dir],
  );
  assert.deepEqual(mounts, [
    { src: proj, dest: proj },
    { src: join(home, 'loose.js'), dest: join(home, 'loose.js') },
  ]);
  // Not hidden: nothing to show.
  assert.deepEqual(argumentMounts([join(proj, 'src', 'server.js')], ['/elsewhere'], []), []);
});

test('the egress rule (the container egress proxy’s) and loopback addresses', () => {
  const rules = { hosts: ['api.example.com', '.example.org', '127.0.0.1'], ports: [443, 8080] };
  assert.equal(egressAllows(rules, 'api.example.com', 443), true);
  assert.equal(egressAllows(rules, 'API.Example.com.', 443), true);
  assert.equal(egressAllows(rules, 'api.example.com', 80), false);
  assert.equal(egressAllows(rules, 'deep.sub.example.org', 8080), true);
  assert.equal(egressAllows(rules, 'example.org', 8080), true);
  assert.equal(egressAllows(rules, 'evil-example.org', 8080), false);
  assert.equal(egressAllows({ hosts: [], ports: [] }, 'anything', 443), false, 'both lists empty: nothing');
  assert.equal(egressAllows({ hosts: [], ports: [443] }, 'anything', 443), true);
});

test('the sandbox egress proxy classifies addresses with the shared address policy: no spelling of a guarded address passes unless listed itself', async () => {
  const portOnly = { hosts: [], ports: [8080] };
  const guarded = [
    '127.0.0.1',
    '127.8.9.1',
    '127.1',
    '0x7f.1',
    '2130706433',
    '0177.0.0.1',
    '0.0.0.0',
    '[::1]',
    '[::]',
    '[::ffff:7f00:1]',
    '[::ffff:127.0.0.1]',
    '[0:0:0:0:0:ffff:7f00:1]',
    '[0000:0000:0000:0000:0000:FFFF:7F00:0001]',
    '[::127.0.0.1]',
    '[::ffff:0:7f00:1]',
    '[64:ff9b::7f00:1]',
    '[2002:7f00:1::]',
    '169.254.169.254',
    '[::ffff:a9fe:a9fe]',
    '[fe80::1]',
    '[fd00:ec2::254]',
    '100.100.100.200',
  ];
  for (const host of guarded) {
    const verdict = await egressVerdict(portOnly, host, 8080);
    assert.equal(verdict.ok, false, host);
    assert.match(verdict.ok ? '' : verdict.reason, /address that the permission profile does not list/, host);
  }
  for (const host of ['0.0.0.0', '0.1.2.3', '[::ffff:0.0.0.0]']) {
    const verdict = await egressVerdict(portOnly, host, 8080);
    assert.match(verdict.ok ? '' : verdict.reason, /the unspecified address/, host);
  }
  // Private and public addresses pass a port-only list, as from a container; so do the
  // special-purpose ranges that lead nowhere into this host (RFC 5737 documentation addresses,
  // which some resolving proxies hand out for public names; multicast).
  for (const host of ['10.1.2.3', '93.184.216.34', '[2606:4700::1111]', '203.0.113.80', '198.18.0.1'])
    assert.equal((await egressVerdict(portOnly, host, 8080)).ok, true, host);
  // Listed itself: the address, in any spelling of that same address, or localhost.
  assert.deepEqual(await egressVerdict({ hosts: ['127.0.0.1'], ports: [] }, '127.1', 80), {
    ok: true,
    address: '127.0.0.1',
  });
  assert.equal((await egressVerdict({ hosts: ['::1'], ports: [] }, '[0:0:0:0:0:0:0:1]', 80)).ok, true);
  assert.equal(
    (await egressVerdict({ hosts: ['169.254.169.254'], ports: [] }, '169.254.169.254', 80)).ok,
    true,
  );
  // An IPv4-mapped spelling is another host than the IPv4 address the list names.
  assert.equal((await egressVerdict({ hosts: ['127.0.0.1'], ports: [] }, '[::ffff:7f00:1]', 80)).ok, false);
  assert.equal((await egressVerdict(portOnly, 'not a host', 8080)).ok, false);
  assert.equal((await egressVerdict(portOnly, '127.0.0.1', 0)).ok, false);
});

test('the relay inside runs in perl when perl is on the server’s PATH, else in Node; both take the same plan', (t) => {
  const withPerl = tempDir(t);
  const without = tempDir(t);
  writeFileSync(join(withPerl, 'perl'), '#!/bin/sh\n', { mode: 0o755 });
  const perl = relayProgram({ PATH: `${without}:${withPerl}` });
  assert.deepEqual(perl, { kind: 'perl', path: join(withPerl, 'perl') });
  assert.deepEqual(relayProgram({ PATH: without }), { kind: 'node' });
  // A perl in a folder the sandbox hides (under the home, say) is passed over.
  assert.deepEqual(relayProgram({ PATH: withPerl }, [withPerl]), { kind: 'node' });
  assert.deepEqual(
    relayProgram({ PATH: `${withPerl}:/usr/bin` }, [withPerl]).kind,
    existsSync('/usr/bin/perl') ? 'perl' : 'node',
  );

  const plan = {
    egress: { port: 3128, socket: '/run/skep/egress.sock' },
    inbound: { socket: '/run/skep/inbound.sock', port: 8080 },
  };
  const pairs = ['tcp:3128', 'unix:/run/skep/egress.sock', 'unix:/run/skep/inbound.sock', 'tcp:8080'];
  const inPerl = relayLaunch(perl, plan, '/usr/bin/server', ['--flag']);
  assert.equal(inPerl.command, join(withPerl, 'perl'));
  // perl swallows the first `--`; the script splits its pairs from the server at the second.
  assert.deepEqual(inPerl.args.slice(2), ['--', ...pairs, '--', '/usr/bin/server', '--flag']);
  assert.deepEqual(inPerl.env, {});
  const inNode = relayLaunch({ kind: 'node' }, plan, '/usr/bin/server', ['--flag']);
  assert.equal(inNode.command, process.execPath);
  assert.deepEqual(JSON.parse(inNode.env[NODE_RELAY_CONFIG_ENV] ?? ''), {
    pairs,
    command: '/usr/bin/server',
    args: ['--flag'],
  });
});
