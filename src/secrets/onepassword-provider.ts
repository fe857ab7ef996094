/**
 * The `1password` provider: read-only, through the 1Password CLI (`op`), which must be
 * installed and signed in (a desktop-app session or `OP_SERVICE_ACCOUNT_TOKEN`). Secret
 * names are 1Password references, `op://<vault>/<item>/<field>`. Values pass from `op`'s
 * stdout straight to the caller and are never logged; `op`'s error text never holds them.
 */
import { execFile } from 'node:child_process';
import { findExecutable, SkepError } from '../shared/index.js';
import { ReadOnlyProvider } from './read-only-provider.js';
import type { ProviderCapabilities, SecretKeyInfo } from './types.js';

export const ONEPASSWORD_CAPABILITIES: ProviderCapabilities = Object.freeze({
  can_read: true,
  can_write: false,
  can_delete: false,
  can_list: true,
  can_cleanup: false,
});

const OP_TIMEOUT_MS = 15_000;
const NOT_FOUND = /isn't an item|not found|no item|could not find|doesn't exist|isn't a (vault|field)/i;

interface OpRef {
  id: string;
  name?: string;
  title?: string;
  label?: string;
}

interface OpItem extends OpRef {
  vault: OpRef;
  fields?: OpRef[];
}

export class OnePasswordProvider extends ReadOnlyProvider {
  readonly type = '1password' as const;
  readonly capabilities = ONEPASSWORD_CAPABILITIES;

  /** Checks that `op` is installed and signed in (used by setup). */
  async verify(): Promise<void> {
    await this.#op(['vault', 'list', '--format=json']);
  }

  async get(name: string): Promise<string | undefined> {
    if (!name.startsWith('op://')) {
      throw new SkepError(
        'bad_request',
        `1Password secret names are references like op://<vault>/<item>/<field>; got '${name}'`,
      );
    }
    try {
      return await this.#op(['read', '--no-newline', name]);
    } catch (err) {
      if (err instanceof OpFailure && NOT_FOUND.test(err.stderr)) return undefined;
      throw err;
    }
  }

  async list(): Promise<SecretKeyInfo[]> {
    const items = parseJson<OpItem[]>(await this.#op(['item', 'list', '--format=json']), 'op item list');
    const keys: SecretKeyInfo[] = [];
    for (const item of items) {
      const full = parseJson<OpItem>(
        await this.#op(['item', 'get', item.id, '--vault', item.vault.id, '--format=json']),
        'op item get',
      );
      for (const field of full.fields ?? []) {
        keys.push({
          key: `op://${item.vault.id}/${item.id}/${field.id}`,
          description: `${item.vault.name ?? item.vault.id} :: ${full.title ?? item.id} :: ${field.label ?? field.id}`,
        });
      }
    }
    return keys.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  protected refusal(what: string): SkepError {
    return new SkepError(
      'secrets_read_only',
      `the 1Password secrets provider is read-only and cannot ${what}; manage the item in 1Password instead`,
    );
  }

  #op(args: string[]): Promise<string> {
    const op = findExecutable('op', this.env);
    if (op === undefined) {
      return Promise.reject(
        new SkepError(
          'unavailable',
          'the 1Password CLI (`op`) is not installed or not on PATH: install it (https://developer.1password.com/docs/cli/get-started/) and sign in, or choose another secrets provider',
        ),
      );
    }
    return new Promise((resolve, reject) => {
      execFile(
        op,
        args,
        { env: this.env, timeout: OP_TIMEOUT_MS, encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 },
        (err, stdout, stderr) => {
          if (err === null) return resolve(stdout);
          if (err.killed === true) {
            return reject(
              new SkepError(
                'gateway_timeout',
                `the 1Password CLI did not answer within ${OP_TIMEOUT_MS / 1000} s`,
              ),
            );
          }
          reject(new OpFailure(args[0] ?? 'op', stderr));
        },
      );
    });
  }
}

/** A failed `op` call; the message carries `op`'s first error line (it never holds values). */
class OpFailure extends SkepError {
  readonly stderr: string;
  constructor(command: string, stderr: string) {
    const line = stderr.trim().split('\n')[0] ?? '';
    super('unavailable', `the 1Password CLI failed (op ${command}): ${line || 'no error output'}`);
    this.stderr = stderr;
  }
}

function parseJson<T>(text: string, what: string): T {
  try {
    return JSON.parse(text) as T;
  } catch (err) {
    throw new SkepError('bad_gateway', `${what} did not return JSON`, { cause: err });
  }
}
