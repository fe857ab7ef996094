/** `skep extauth validate -f file.yaml`: offline validation of MCPExternalAuthConfig documents. */
import { parseAllDocuments } from 'yaml';
import { SkepError, terminalSafe } from '../../../shared/index.js';
import { readInputFile } from '../input-file.js';
import { printJson } from '../output.js';

interface Outcome {
  document: number;
  name: string;
  valid: boolean;
  problems: string[];
}

export async function validate(opts: { file: string; json?: boolean }): Promise<void> {
  // Loaded on demand (the operator module pulls in the Kubernetes client).
  const { formatProblem, validateExtAuthConfig } = await import('../../operator/index.js');
  const text = readInputFile(opts.file, { dashIsStdin: true });
  const outcomes: Outcome[] = [];
  parseAllDocuments(text).forEach((doc, i) => {
    if (doc.errors.length > 0) {
      outcomes.push({
        document: i + 1,
        name: '?',
        valid: false,
        problems: doc.errors.map((e) => `yaml: ${e.message}`),
      });
      return;
    }
    const value = doc.toJS() as unknown;
    if (value === null || value === undefined) return;
    const name = String((value as { metadata?: { name?: unknown } }).metadata?.name ?? '?');
    const problems = validateExtAuthConfig(value).problems.map(formatProblem);
    outcomes.push({ document: i + 1, name, valid: problems.length === 0, problems });
  });
  if (outcomes.length === 0) throw new SkepError('invalid_config', `${opts.file} holds no documents`);
  if (opts.json === true) {
    printJson({ valid: outcomes.every((o) => o.valid), documents: outcomes });
  } else {
    for (const o of outcomes) {
      if (o.valid) process.stdout.write(`${o.name}: valid\n`);
      else for (const p of o.problems) process.stdout.write(`${o.name}: ${terminalSafe(p)}\n`);
    }
  }
  const invalid = outcomes.filter((o) => !o.valid).length;
  // main() turns a SkepError into exit status 1.
  if (invalid > 0)
    throw new SkepError('invalid_config', `${invalid} of ${outcomes.length} document(s) invalid`);
}
