/**
 * The first server most people run: @modelcontextprotocol/server-filesystem (fetched by npx),
 * sandboxed, through the real CLI. Without a grant its sandbox hides the folder it is given, and
 * `skep run` says so on its first line with the flag that grants it; with `--volume` the
 * server lists and writes that folder (`skep mcp call`, through its proxy), and the file lands
 * on the host.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { probeBwrap } from '../../src/dataplane/runtime/index.js';
import { runCliAsync } from '../helpers/cli.js';
import { requireService } from '../helpers/services.js';
import { workloadHome } from '../integration/workloads/helpers.js';

const SERVER = 'npx://@modelcontextprotocol/server-filesystem';

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

test(
  'skep run --volume grants the filesystem server its folder; without it, the first line says what was hidden',
  { timeout: 400_000 },
  async (t) => {
    const bwrap = probeBwrap('bwrap');
    if (!requireService(t, 'bubblewrap', bwrap.ok, `${bwrap.ok ? '' : bwrap.reason}; apt install bubblewrap`))
      return;
    const { home } = workloadHome(t);
    // Under /tmp, which every sandbox replaces with a private one: hidden unless granted.
    const folder = mkdtempSync(join(tmpdir(), 'skep-fsdemo-'));
    t.after(() => rmSync(folder, { recursive: true, force: true }));
    const skep = async (...args: string[]): Promise<Outcome> => {
      const r = await runCliAsync(args, { ...home.env, SKEP_LOG_LEVEL: 'silent' }, 180_000);
      return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
    };
    const ok = async (...args: string[]): Promise<string> => {
      const out = await skep(...args);
      assert.equal(out.code, 0, `skep ${args.join(' ')} failed: ${out.stdout}${out.stderr}`);
      return out.stdout;
    };

    const hidden = await skep('run', SERVER, '--name', 'files', '--', folder);
    assert.equal(hidden.code, 1, hidden.stdout + hidden.stderr);
    // The failure's first line (after the progress line a non-terminal gets while it waits).
    const failure = `${hidden.stderr}${hidden.stdout}`.split('\n').find((l) => l.includes('failed to start'));
    assert.match(
      failure ?? '',
      new RegExp(`failed to start: its sandbox hid ${folder} from it`),
      hidden.stderr + hidden.stdout,
    );
    assert.match(`${hidden.stderr}${hidden.stdout}`, new RegExp(`skep run … --volume ${folder}`));
    // A failed first start leaves nothing behind: the same name is free for the next run.
    assert.deepEqual(
      (JSON.parse(await ok('list', '--all', '--json')) as { workloads: unknown[] }).workloads,
      [],
    );

    await ok('run', SERVER, '--name', 'files', '--volume', folder, '--', folder);
    const target = join(folder, 'hello.txt');
    await ok(
      'mcp',
      'call',
      'files',
      'write_file',
      '--arg',
      `path=${target}`,
      '--arg',
      'content=written through skep',
    );
    assert.equal(readFileSync(target, 'utf8'), 'written through skep', 'the file is on the host');
    assert.match(await ok('mcp', 'call', 'files', 'list_directory', '--arg', `path=${folder}`), /hello\.txt/);
    // A folder it was not granted stays out of reach.
    const other = mkdtempSync(join(tmpdir(), 'skep-fsdemo-other-'));
    t.after(() => rmSync(other, { recursive: true, force: true }));
    const refused = await skep('mcp', 'call', 'files', 'list_directory', '--arg', `path=${other}`);
    assert.equal(refused.code, 1, 'a folder outside the grant is an error');
    await ok('rm', 'files');
  },
);

test('--volume: HOST[:IN_SERVER][:ro] is parsed; a local server sees a folder at its own path', async () => {
  const { parseVolumeFlag } = await import('../../src/control/cli/actions/workloads.js');
  assert.deepEqual(parseVolumeFlag('/data'), { host: '/data', inServer: undefined, readOnly: false });
  assert.deepEqual(parseVolumeFlag('/data:ro'), { host: '/data', inServer: undefined, readOnly: true });
  assert.deepEqual(parseVolumeFlag('/data:/projects:ro'), {
    host: '/data',
    inServer: '/projects',
    readOnly: true,
  });
  for (const bad of ['', ':/x', '/a:/b:/c', '/a::ro'])
    assert.throws(() => parseVolumeFlag(bad), /invalid --volume/, bad);
});
