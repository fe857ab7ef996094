// Descriptors a server must not inherit (src/dataplane/runtime/sandbox/inherited-fds.ts), in a
// child process that starts with an inherited descriptor and, profiled for perf, V8's map.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';

const MODULE = new URL('../../../src/dataplane/runtime/sandbox/inherited-fds.ts', import.meta.url).href;

/**
 * Node marks the descriptors it starts with close-on-exec up to the first gap after 15, so the
 * inherited file is passed as descriptor 40, past a gap.
 */
const INHERITED = 40;

/** Runs closeInheritedFds() in a child that inherits a file as descriptor 40; its report. */
function childReport(nodeFlags: string[]): {
  closed: number[];
  open: Record<string, string>;
  stderr: string;
} {
  const dir = mkdtempSync(join(tmpdir(), 'skep-fds-'));
  const fd = openSync(join(dir, 'inherited'), 'w');
  try {
    const script = `
      import { readdirSync, readlinkSync } from 'node:fs';
      const { closeInheritedFds } = await import(${JSON.stringify(MODULE)});
      const closed = closeInheritedFds();
      const open = {};
      for (const e of readdirSync('/proc/self/fd')) {
        try { open[e] = readlinkSync('/proc/self/fd/' + e); } catch {}
      }
      process.stdout.write(JSON.stringify({ closed, open }));
    `;
    const r = spawnSync(
      process.execPath,
      [...nodeFlags, '--import', 'tsx', '--input-type=module', '-e', script],
      {
        stdio: ['ignore', 'pipe', 'pipe', ...Array<'ignore'>(INHERITED - 3).fill('ignore'), fd],
        encoding: 'utf8',
      },
    );
    assert.equal(r.status, 0, r.stderr);
    return {
      ...(JSON.parse(r.stdout) as { closed: number[]; open: Record<string, string> }),
      stderr: r.stderr,
    };
  } finally {
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('closeInheritedFds', () => {
  it('closes a descriptor inherited without close-on-exec', () => {
    const { closed, open } = childReport([]);
    assert.ok(closed.includes(INHERITED), `closed: ${closed.join(',')}`);
    assert.ok(!Object.values(open).some((p) => p.endsWith('/inherited')), JSON.stringify(open));
  });

  it("leaves V8's perf map open (closing it would send symbol lines into the next socket) and warns", () => {
    const { closed, open, stderr } = childReport(['--perf-basic-prof']);
    assert.ok(closed.includes(INHERITED), `closed: ${closed.join(',')}`);
    const maps = Object.entries(open).filter(([, p]) => /^\/tmp\/perf-\d+\.map$/.test(p));
    assert.equal(maps.length, 1, JSON.stringify(open));
    assert.ok(!closed.includes(Number(maps[0]![0])));
    assert.match(stderr, /perf symbol map \(--perf-basic-prof\): left open/);
    rmSync(maps[0]![1], { force: true });
  });
});
