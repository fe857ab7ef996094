/**
 * The OS keyring, through the freedesktop Secret Service (`secret-tool`, from libsecret).
 *
 * The keyring is "usable" only when `secret-tool` is on PATH, a D-Bus session bus is
 * advertised, and a probe lookup answers without a service error. On headless machines and
 * in CI none of this holds, and Skep falls back to `SKEP_SECRETS_PASSWORD` or a 0600
 * password file. The password travels over stdin, never on a command line.
 */
import { execFile } from 'node:child_process';
import { findExecutable } from '../shared/index.js';

const ATTRIBUTES = ['service', 'skep', 'account', 'secrets-password'];
const TIMEOUT_MS = 5_000;

export interface Keyring {
  /** A short name for messages, e.g. "the Secret Service keyring". */
  readonly description: string;
  /** Whether the keyring can be used here; the reason when it cannot. */
  probe(): Promise<{ usable: true } | { usable: false; reason: string }>;
  get(): Promise<string | undefined>;
  set(password: string): Promise<void>;
}

interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

function run(file: string, args: string[], env: NodeJS.ProcessEnv, input?: string): Promise<RunResult> {
  return new Promise((resolve) => {
    const child = execFile(
      file,
      args,
      { env, timeout: TIMEOUT_MS, encoding: 'utf8' },
      (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof err.code === 'number' ? err.code : -1;
        resolve({ code, stdout, stderr });
      },
    );
    child.stdin?.end(input ?? '');
  });
}

export function secretServiceKeyring(env: NodeJS.ProcessEnv): Keyring {
  let probed: Promise<{ usable: true } | { usable: false; reason: string }> | undefined;
  const tool = () => findExecutable('secret-tool', env);
  return {
    description: 'the OS keyring (Secret Service)',
    probe() {
      probed ??= (async () => {
        const file = tool();
        if (file === undefined)
          return { usable: false as const, reason: '`secret-tool` (libsecret) is not installed' };
        if ((env['DBUS_SESSION_BUS_ADDRESS'] ?? '') === '') {
          return {
            usable: false as const,
            reason: 'no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is unset)',
          };
        }
        // Exit 1 with no output means "no such item"; a service failure prints an error.
        const res = await run(file, ['lookup', ...ATTRIBUTES], env);
        if (res.code === 0 || (res.code === 1 && res.stderr.trim() === '')) return { usable: true as const };
        return {
          usable: false as const,
          reason: `the Secret Service did not answer (${res.stderr.trim() || `exit ${res.code}`})`,
        };
      })();
      return probed;
    },
    async get() {
      const file = tool();
      if (file === undefined) return undefined;
      const res = await run(file, ['lookup', ...ATTRIBUTES], env);
      if (res.code !== 0) return undefined;
      const value = res.stdout.replace(/\n$/, '');
      return value === '' ? undefined : value;
    },
    async set(password) {
      const file = tool();
      if (file === undefined) throw new Error('secret-tool is not installed');
      const res = await run(file, ['store', '--label=Skep secrets password', ...ATTRIBUTES], env, password);
      if (res.code !== 0)
        throw new Error(`secret-tool store failed: ${res.stderr.trim() || `exit ${res.code}`}`);
    },
  };
}
