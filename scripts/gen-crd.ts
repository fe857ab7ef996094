// Writes deploy/crds/skep.dev_mcpexternalauthconfigs.yaml from the TypeBox definition.
// Run: node --import tsx scripts/gen-crd.ts   (add --check to fail when the file is stale)
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { CRD_FILE, renderCrdYaml } from '../src/operator/crd-yaml.js';

const target = fileURLToPath(new URL(`../${CRD_FILE}`, import.meta.url));
const text = renderCrdYaml();
if (process.argv.includes('--check')) {
  if (readFileSync(target, 'utf8') !== text) {
    process.stderr.write(`${CRD_FILE} is stale; run node --import tsx scripts/gen-crd.ts\n`);
    process.exit(1);
  }
} else {
  writeFileSync(target, text);
  process.stdout.write(`wrote ${CRD_FILE}\n`);
}
