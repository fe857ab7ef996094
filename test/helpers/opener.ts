/**
 * A browser opener that records instead of opening: a small Node script that `SKEP_BROWSER`
 * points Skep at. Each call appends its argv, and what the file it was given holds at that
 * moment (mode and text), so a test can check that no credential was on the command line
 * and that the page only the user can read forwards to the right URL.
 */
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { waitFor } from './wait.js';

export interface OpenerCall {
  /** The opener's arguments, as the process list showed them. */
  argv: string[];
  /** The file the single argument names (a file:// URL): its mode and content. */
  mode?: number;
  page?: string;
}

export interface RecordingOpener {
  /** Environment that makes Skep use this opener. */
  env: { SKEP_BROWSER: string };
  calls(): OpenerCall[];
  /** Waits for the `n`th call (1-based). */
  waitForCall(n?: number): Promise<OpenerCall>;
  /** The URL the page forwards to (its meta refresh). */
  forwardsTo(call: OpenerCall): string;
}

export function recordingOpener(t: TestContext): RecordingOpener {
  const dir = mkdtempSync(join(tmpdir(), 'skep-opener-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const record = join(dir, 'calls.jsonl');
  const script = join(dir, 'open');
  writeFileSync(
    script,
    [
      `#!${process.execPath}`,
      "const fs = require('node:fs');",
      "const { fileURLToPath } = require('node:url');",
      'const argv = process.argv.slice(2);',
      'const call = { argv };',
      'try {',
      "  const file = argv[0].startsWith('file:') ? fileURLToPath(argv[0]) : argv[0];",
      '  call.mode = fs.statSync(file).mode & 0o777;',
      "  call.page = fs.readFileSync(file, 'utf8');",
      '} catch {}',
      `fs.appendFileSync(${JSON.stringify(record)}, JSON.stringify(call) + '\\n');`,
      '',
    ].join('\n'),
  );
  chmodSync(script, 0o755);
  const calls = (): OpenerCall[] =>
    existsSync(record)
      ? readFileSync(record, 'utf8')
          .split('\n')
          .filter((line) => line !== '')
          .map((line) => JSON.parse(line) as OpenerCall)
      : [];
  return {
    env: { SKEP_BROWSER: script },
    calls,
    async waitForCall(n = 1) {
      await waitFor(`opener call ${n}`, () => calls().length >= n, 60_000);
      return calls()[n - 1] as OpenerCall;
    },
    forwardsTo(call) {
      const found = /<meta http-equiv="refresh" content="0;url=([^"]+)">/.exec(call.page ?? '')?.[1];
      if (found === undefined) throw new Error(`no meta refresh in ${call.page ?? '(no page)'}`);
      return found.replace(/&#(\d+);/g, (_, code: string) => String.fromCharCode(Number(code)));
    },
  };
}
