// Init container of a stdio MCPServer pod: copies a self-contained Skep runner into the
// emptyDir shared with the server's container (docs/kubernetes.md). The server's image may lack Node
// or have another libc, so next to the bundle and its dependencies this copies the node
// binary and every shared library this very process has mapped (read from
// /proc/self/maps, the dynamic loader included, renamed lib/ld.so). The server's container
// then runs `<dir>/lib/ld.so --library-path <dir>/lib <dir>/bin/node <dir>/app/dist/skep.mjs ...`.
// Usage: node install-runner.mjs <target-dir>
import { chmodSync, copyFileSync, cpSync, mkdirSync, readFileSync, realpathSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const target = process.argv[2];
if (!target) {
  process.stderr.write('usage: node install-runner.mjs <target-dir>\n');
  process.exit(2);
}
const source = dirname(fileURLToPath(import.meta.url));
mkdirSync(join(target, 'bin'), { recursive: true });
mkdirSync(join(target, 'lib'), { recursive: true });
cpSync(join(source, 'dist'), join(target, 'app', 'dist'), { recursive: true });
cpSync(join(source, 'node_modules'), join(target, 'app', 'node_modules'), { recursive: true, verbatimSymlinks: true });
copyFileSync(join(source, 'package.json'), join(target, 'app', 'package.json'));
copyFileSync(realpathSync(process.execPath), join(target, 'bin', 'node'));
chmodSync(join(target, 'bin', 'node'), 0o755);
const libs = new Set();
for (const line of readFileSync('/proc/self/maps', 'utf8').split('\n')) {
  const path = line.split(/\s+/)[5];
  if (path && path.startsWith('/') && /\.so(\.|$)/.test(basename(path))) libs.add(path);
}
let loader = false;
for (const lib of libs) {
  const name = basename(lib);
  copyFileSync(lib, join(target, 'lib', name));
  if (/^ld-(linux|musl)/.test(name)) {
    copyFileSync(lib, join(target, 'lib', 'ld.so'));
    chmodSync(join(target, 'lib', 'ld.so'), 0o755);
    loader = true;
  }
}
if (!loader) {
  process.stderr.write('no dynamic loader found in /proc/self/maps\n');
  process.exit(1);
}
process.stdout.write(`installed the Skep runner in ${target} (${libs.size} shared libraries)\n`);
