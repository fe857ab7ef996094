/**
 * `skep secret setup|set|get|list|rm`. Values and passwords are read from stdin or a hidden
 * prompt, never from argv (argv is visible to every user through `ps`).
 */
import { createInterface } from 'node:readline';
import { Writable } from 'node:stream';
import type { Command } from 'commander';
import type { EncryptedState, SecretsService } from '../../../secrets/index.js';
import { definedOnly, SkepError } from '../../../shared/index.js';
import { withContext } from '../context.js';
import { UsageError } from '../errors.js';
import { addListing } from '../command-shapes.js';
import { type JsonOpt, printOutcome } from '../output.js';

/** Reads a line without echoing it; undefined when there is no terminal. */
async function promptHidden(question: string): Promise<string | undefined> {
  if (process.stdin.isTTY !== true) return undefined;
  process.stderr.write(question);
  const muted = new Writable({
    write(_chunk, _enc, done) {
      done();
    },
  });
  const rl = createInterface({ input: process.stdin, output: muted, terminal: true });
  try {
    return await new Promise<string>((resolve) => rl.question('', resolve));
  } finally {
    rl.close();
    process.stderr.write('\n');
  }
}

let stdinText: Promise<string> | undefined;
function readStdin(): Promise<string> {
  stdinText ??= (async () => {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  })();
  return stdinText;
}

async function readStdinLines(): Promise<string[]> {
  return (await readStdin()).split(/\r?\n/);
}

/** A secret value: all of stdin (one trailing newline dropped), or a hidden prompt. */
async function readValue(name: string): Promise<string> {
  if (process.stdin.isTTY === true) {
    const value = await promptHidden(`Value for secret '${name}': `);
    return value ?? '';
  }
  return (await readStdin()).replace(/\r?\n$/, '');
}

async function withSecrets<T>(
  fn: (secrets: SecretsService) => Promise<T>,
  options: { ask?: boolean } = {},
): Promise<T> {
  const { SecretsService } = await import('../../../secrets/index.js');
  return withContext(async (ctx) => {
    const secrets = new SecretsService({
      store: ctx.store,
      paths: ctx.config.paths,
      ...(options.ask === false
        ? {}
        : { askPassword: () => promptHidden('Password of the encrypted secrets store: ') }),
    });
    try {
      return await fn(secrets);
    } finally {
      secrets.close();
    }
  });
}

interface SetupOptions extends JsonOpt {
  provider: string;
  passwordStdin?: boolean;
  changePassword?: boolean;
  savePassword?: boolean;
}

/**
 * The password of an encrypted store, asked once on a terminal: nothing when one is saved (the
 * environment, the keyring, the password file); the store's password when it exists; else a new
 * one, typed twice (empty: a strong one is generated and saved).
 */
async function askSetupPassword(state: EncryptedState): Promise<string | undefined> {
  if (state.saved !== undefined) return undefined;
  if (state.exists) {
    const typed = await promptHidden('Password of the encrypted secrets store: ');
    if (typed === undefined || typed === '')
      throw new SkepError(
        'secrets_locked',
        'no password given: the encrypted store exists and needs its password',
      );
    return typed;
  }
  const typed = await promptHidden(
    'New password for the encrypted secrets store (empty: generate a strong one and save it): ',
  );
  if (typed === undefined || typed === '') return undefined;
  const again = await promptHidden('The same password again: ');
  if (again !== typed) throw new SkepError('bad_request', 'the two passwords differ; nothing was set up');
  return typed;
}

export function registerSecret(program: Command): void {
  const secret = program.command('secret').description('Manage the secrets provider and its secrets');

  secret
    .command('setup')
    .description('Set up or reconfigure the secrets provider (encrypted, environment, 1password)')
    .option('--provider <type>', 'encrypted | environment | 1password', 'encrypted')
    .option(
      '--password-stdin',
      'read the password from stdin (with --change-password: current, then new, one per line)',
    )
    .option('--change-password', 're-encrypt every secret under a new password')
    .option(
      '--save-password',
      'keep the password you give in the OS keyring (else a 0600 file) so skep serve and workloads can open the store',
    )
    .option('--json', 'print JSON')
    .action(async (opts: SetupOptions) => {
      if (opts.savePassword === true && opts.provider !== 'encrypted')
        throw new UsageError(`--save-password applies only to the encrypted provider, not ${opts.provider}`);
      let password: string | undefined;
      let newPassword: string | undefined;
      if (opts.passwordStdin === true) {
        const lines = await readStdinLines();
        password = lines[0];
        if (opts.changePassword === true) newPassword = lines[1];
      } else if (
        opts.provider === 'encrypted' &&
        process.stdin.isTTY === true &&
        opts.changePassword !== true
      ) {
        const state = await withSecrets((s) => s.encryptedState(), { ask: false });
        password = await askSetupPassword(state);
      } else if (opts.changePassword === true && process.stdin.isTTY !== true) {
        newPassword = (await readStdinLines())[0];
      }
      if (opts.changePassword === true && newPassword === undefined) {
        newPassword = await promptHidden('New password: ');
        const again = await promptHidden('New password again: ');
        if (newPassword !== again) throw new SkepError('bad_request', 'the two new passwords differ');
      }
      if (opts.changePassword === true && (newPassword === undefined || newPassword === '')) {
        throw new UsageError('no new password given: pipe it on stdin or run in a terminal');
      }
      const result = await withSecrets(
        (s) =>
          s.setup({
            provider_type: opts.provider,
            ...definedOnly({ password, new_password: newPassword }),
            ...(opts.provider === 'encrypted' ? { save_password: opts.savePassword === true } : {}),
          }),
        // Asked above when setting up; --change-password asks for the current one if none is saved.
        { ask: opts.changePassword === true },
      );
      printOutcome(opts, result, result.message);
    });

  secret
    .command('set <name>')
    .description('Create or replace a secret; the value is read from stdin or a hidden prompt')
    .action(async (name: string) => {
      const value = await readValue(name);
      const created = await withSecrets(async (s) => {
        try {
          await s.create(name, value);
          return true;
        } catch (err) {
          if (!(err instanceof SkepError) || err.code !== 'secret_exists') throw err;
        }
        await s.update(name, value);
        return false;
      });
      process.stdout.write(`secret ${name} ${created ? 'created' : 'updated'}\n`);
    });

  secret
    .command('get <name>')
    .description('Print the value of a secret')
    .action(async (name: string) => {
      const value = await withSecrets((s) => s.get(name));
      if (value === undefined) throw new SkepError('secret_not_found', `secret '${name}' does not exist`);
      process.stdout.write(`${value}\n`);
    });

  addListing(secret, 'list', 'List secret names (never values)', {
    load: () => withSecrets((s) => s.listKeys()),
    json: (keys) => ({ keys }),
    headers: ['KEY', 'DESCRIPTION'],
    row: (k) => [k.key, k.description],
  }).alias('ls');

  secret
    .command('rm <name>')
    .alias('delete')
    .description('Delete a secret')
    .action(async (name: string) => {
      await withSecrets((s) => s.delete(name));
      process.stdout.write(`secret ${name} deleted\n`);
    });
}
