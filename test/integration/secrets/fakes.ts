/**
 * Stand-ins for programs that cannot run here, written as real executables on a temp PATH:
 * the 1Password CLI (`op`: needs a 1Password account) and `secret-tool` (needs a desktop
 * Secret Service on D-Bus). They implement only the calls Skep makes.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';

function binDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'skep-fakebin-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function script(dir: string, name: string, body: string): void {
  const file = join(dir, name);
  writeFileSync(file, `#!${process.execPath}\n${body}`);
  chmodSync(file, 0o755);
}

/** A fake `op` with one vault, one item and two fields. Returns the directory to put on PATH. */
export function fakeOp(t: TestContext): string {
  const dir = binDir(t);
  script(
    dir,
    'op',
    `
const args = process.argv.slice(2);
const vault = { id: 'vlt1', name: 'Private' };
const item = { id: 'itm1', title: 'GitHub', vault };
const fields = { fld1: ['token', 'ghp_from_1password'], fld2: ['user', 'octocat'] };
const cmd = args.slice(0, 2).join(' ');
if (process.env.OP_SERVICE_ACCOUNT_TOKEN !== 'fake-token') {
  process.stderr.write('[ERROR] You are not currently signed in.\\n');
  process.exit(1);
}
if (cmd === 'vault list') { process.stdout.write(JSON.stringify([vault])); process.exit(0); }
if (cmd === 'item list') { process.stdout.write(JSON.stringify([item])); process.exit(0); }
if (cmd === 'item get' && args[2] === 'itm1') {
  const out = { ...item, fields: Object.entries(fields).map(([id, [label, value]]) => ({ id, label, value })) };
  process.stdout.write(JSON.stringify(out)); process.exit(0);
}
if (args[0] === 'read') {
  const ref = args[args.length - 1];
  const m = /^op:\\/\\/(?:vlt1|Private)\\/(?:itm1|GitHub)\\/(\\w+)$/.exec(ref);
  const hit = m && (fields[m[1]] || Object.values(fields).find(([label]) => label === m[1]));
  if (hit) { process.stdout.write(hit[1]); process.exit(0); }
  process.stderr.write('[ERROR] could not read secret ' + ref + ': "x" isn\\'t an item in the "Private" vault\\n');
  process.exit(1);
}
process.stderr.write('[ERROR] unknown command ' + args.join(' ') + '\\n');
process.exit(1);
`,
  );
  return dir;
}

/** A fake `secret-tool` that keeps one password in a file. Returns the PATH directory. */
export function fakeSecretTool(t: TestContext): string {
  const dir = binDir(t);
  const store = join(dir, 'keyring.txt');
  script(
    dir,
    'secret-tool',
    `
const fs = require('node:fs');
const args = process.argv.slice(2);
if (args[0] === 'lookup') {
  try { process.stdout.write(fs.readFileSync(${JSON.stringify(store)}, 'utf8')); process.exit(0); }
  catch { process.exit(1); }
}
if (args[0] === 'store') {
  const chunks = [];
  process.stdin.on('data', (c) => chunks.push(c));
  process.stdin.on('end', () => { fs.writeFileSync(${JSON.stringify(store)}, Buffer.concat(chunks)); process.exit(0); });
} else {
  process.stderr.write('unsupported\\n'); process.exit(2);
}
`,
  );
  return dir;
}
