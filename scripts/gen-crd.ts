// Writes deploy/crds/*.yaml (and the Helm chart's copies) from the TypeBox definitions in src/schemas/.
// Run: node --import tsx scripts/gen-crd.ts   (add --check to fail when a file is stale)
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { renderAllCrdFiles } from '../src/control/operator/crd-yaml.js';

let stale = false;
// The Helm chart ships the same files (deploy/helm/skep-operator/crds/).
const files = renderAllCrdFiles().flatMap((f) => [
  f,
  { file: f.file.replace('deploy/crds/', 'deploy/helm/skep-operator/crds/'), text: f.text },
]);
for (const { file, text } of files) {
  const target = fileURLToPath(new URL(`../${file}`, import.meta.url));
  if (process.argv.includes('--check')) {
    let current = '';
    try {
      current = readFileSync(target, 'utf8');
    } catch {
      // missing counts as stale
    }
    if (current !== text) {
      process.stderr.write(`${file} is stale; run node --import tsx scripts/gen-crd.ts\n`);
      stale = true;
    }
  } else {
    writeFileSync(target, text);
    process.stdout.write(`wrote ${file}\n`);
  }
}
if (stale) process.exit(1);
