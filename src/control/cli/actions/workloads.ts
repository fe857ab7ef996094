/** What the workload commands do: `skep run`, `upgrade-check`, `upgrade`, `stop`, `rm`, `restart`, `logs`, `export`. */
import { createPublicKey, type KeyObject } from 'node:crypto';
import { closeSync, existsSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import type { ApiContext } from '../../app/index.js';
import {
  BUILTIN_PROFILES,
  type PermissionProfile,
  resolvePermissionProfile,
} from '../../../dataplane/runtime/index.js';
import { definedOnly, isSkepError, SkepError, terminalSafe, writeFileAtomic } from '../../../shared/index.js';
import {
  type CreateOptions,
  type CreateWorkloadRequest,
  type Transport,
  tailFile,
} from '../../../workloads/index.js';
import { withContext } from '../context.js';
import { UsageError } from '../errors.js';
import { readInputFile } from '../input-file.js';
import { type JsonOpt, printJson, printListing, printOutcome } from '../output.js';
import { LogView, wantsColour } from '../log-view.js';
import type { StartFailure } from '../start-failure.js';
import {
  type AfterFailure,
  defaultWaitMs,
  failureDetails,
  type StartOutcome,
  waitForStart,
} from '../start-wait.js';

/** `skep run` / `skep restart` gave up: the cause on the first line, then evidence and what to do. */
function startFailed(name: string, failure: StartFailure, after: AfterFailure, remote: boolean): SkepError {
  return new SkepError(
    'bad_gateway',
    `workload ${name} failed to start: ${failure.summary}\n${failureDetails(name, failure, after, remote)}`,
  );
}

function stillStarting(name: string, waitMs: number, context: string): SkepError {
  return new SkepError(
    'gateway_timeout',
    `workload ${name} did not answer within ${Math.round(waitMs / 1000)}s${context === '' ? '' : ` (${context})`}\n` +
      `  it keeps starting in the background: 'skep list --all' shows its status, 'skep logs ${name}' its log, 'skep rm ${name}' removes it`,
  );
}

/**
 * Waits for `name` to answer. A start that failed is given up on unless the workload ran before
 * (`onFailure` 'retry'): only a server that once worked is worth retrying in the background.
 * Given up on, the workload is removed ('remove': a new workload leaves nothing behind) or kept
 * stopped with status `error` ('keep'). Throws what to tell the user; returns the outcome otherwise.
 */
async function awaitStart(
  ctx: ApiContext,
  name: string,
  waitMs: number | undefined,
  onFailure: 'remove' | 'keep' | 'retry',
): Promise<Exclude<StartOutcome, { kind: 'failed' | 'timeout' }>> {
  const config = ctx.workloads.exportConfig(name);
  const timeoutMs = waitMs ?? defaultWaitMs(config);
  const outcome = await waitForStart(ctx, name, { timeoutMs, out: process.stderr });
  if (outcome.kind === 'failed') {
    if (onFailure !== 'retry') await ctx.workloads.abandonStart(name, outcome.failure.summary);
    if (onFailure === 'remove') await ctx.workloads.deleteNow(name);
    const after = onFailure === 'remove' ? 'removed' : onFailure === 'keep' ? 'kept' : 'retrying';
    throw startFailed(name, outcome.failure, after, config.remote_url !== undefined);
  }
  if (outcome.kind === 'timeout') throw stillStarting(name, timeoutMs, outcome.context);
  return outcome;
}

function parseEnv(pairs: string[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    if (at <= 0) throw new UsageError(`invalid --env '${pair}': use KEY=VALUE`);
    env[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return env;
}

function parseSecretFlag(text: string): { name: string; target: string } {
  const match = /^([^,]+),target=(.+)$/.exec(text);
  if (match === null) throw new UsageError(`invalid --secret '${text}': use <name>,target=<ENV_VAR>`);
  return { name: match[1] as string, target: match[2] as string };
}

/**
 * `cmd://./server.js` is relative to where the user typed it, not to the runner's directory;
 * a path (`./server`, `/opt/srv/server`; never a container image) means `cmd://<path>`.
 */
function absoluteCommand(ref: string): string {
  if (/^\.{0,2}\//.test(ref)) return `cmd://${resolve(ref)}`;
  if (!ref.startsWith('cmd://')) return ref;
  const target = ref.slice('cmd://'.length);
  if (isAbsolute(target) || !target.includes('/')) return ref;
  return `cmd://${resolve(target)}`;
}

/**
 * A local server runs in Skep's data directory, not where `skep run` was typed: arguments that
 * name an existing file or directory relative to here (`./docs`, `server/index.js`, `.`) are
 * made absolute, as the command of `cmd://` is. Flags and anything else pass unchanged.
 */
function absoluteArgs(image: string, args: string[]): string[] {
  if (!/^(npx|uvx|cmd):\/\//.test(image)) return args;
  return args.map((arg) =>
    arg === '' || arg.startsWith('-') || isAbsolute(arg) || !existsSync(arg) ? arg : resolve(arg),
  );
}

/** `--volume HOST[:IN_SERVER][:ro]` (ToolHive's spelling), HOST made absolute. */
interface VolumeFlag {
  host: string;
  inServer: string | undefined;
  readOnly: boolean;
}

export function parseVolumeFlag(value: string): VolumeFlag {
  const parts = value.split(':');
  const readOnly = parts.length > 1 && parts.at(-1) === 'ro';
  if (readOnly) parts.pop();
  const [host = '', inServer, ...rest] = parts;
  if (host === '' || rest.length > 0 || inServer === '')
    throw new UsageError(`invalid --volume '${value}': write HOST[:IN_SERVER][:ro]`);
  return { host: resolve(host), inServer, readOnly };
}

/**
 * The folders `--volume` grants, as the request's fields. A container mounts each at
 * IN_SERVER (default: the same path). A local process sees the host's file system through its
 * sandbox, so a folder appears at its own path: it joins the effective permission profile's
 * `write` (or `read` with `:ro`) — that profile being `--permission-profile`, else the registry
 * entry's, else the built-in `network` one, so granting a folder changes nothing else.
 */
function grantsOf(
  image: string,
  volumes: VolumeFlag[],
  base: PermissionProfile | undefined,
): Pick<CreateWorkloadRequest, 'volumes' | 'permission_profile'> {
  if (volumes.length === 0) return base === undefined ? {} : { permission_profile: base };
  if (!/^(npx|uvx|cmd):\/\//.test(image))
    return {
      volumes: volumes.map((v) => `${v.host}:${v.inServer ?? v.host}${v.readOnly ? ':ro' : ''}`),
      ...(base === undefined ? {} : { permission_profile: base }),
    };
  const moved = volumes.find((v) => v.inServer !== undefined && resolve(v.inServer) !== v.host);
  if (moved !== undefined)
    throw new UsageError(
      `--volume ${moved.host}:${moved.inServer}: a local server sees a folder at its own path; ` +
        `use --volume ${moved.host}${moved.readOnly ? ':ro' : ''} and give the server that path`,
    );
  const profile = structuredClone(base ?? BUILTIN_PROFILES.network);
  for (const v of volumes) {
    const list = v.readOnly ? (profile.read ??= []) : (profile.write ??= []);
    if (!list.includes(v.host)) list.push(v.host);
  }
  return { permission_profile: profile };
}

export interface RunOptions {
  name?: string;
  group?: string;
  env: string[];
  secret: string[];
  transport?: string;
  proxyPort?: number;
  targetPort?: number;
  proxyMode?: string;
  tools?: string;
  sandbox?: string;
  guardrails?: string;
  imageVerification?: string;
  imageVerificationKey: string[];
  imageVerificationTrustedRoot?: string;
  imageVerificationIdentity?: string;
  imageVerificationIdentityRegexp?: string;
  imageVerificationIssuer?: string;
  openToLocalUsers?: boolean;
  volume: string[];
  permissionProfile?: string;
  fromConfig?: string;
  wait?: number;
  keepOnFailure?: boolean;
  /** false with --no-autostart. */
  autostart?: boolean;
  json?: boolean;
}

/**
 * `skep run` of a name that is taken (given, from the file, or derived from the server: the same
 * server gives the same name) says what exists and the ways on; it never makes `name-2`.
 */
function alreadyExists(ctx: ApiContext, err: SkepError): SkepError {
  const name = err.details?.['name'];
  if (typeof name !== 'string') return err;
  let status: string;
  try {
    status = ctx.workloads.status(name).status;
  } catch {
    return err;
  }
  const state = status === 'running' ? 'is running' : `has status ${status}`;
  const restart =
    status === 'running' ? `'skep restart ${name}' restarts it` : `'skep restart ${name}' starts it again`;
  return new SkepError(
    'workload_exists',
    `workload ${name} already exists and ${state}; ${restart}, 'skep rm ${name}' removes it, ` +
      `or add --name <another-name> to run a second one ('skep list --all' lists them)`,
    { details: { name } },
  );
}

export async function run(server: string | undefined, args: string[], opts: RunOptions): Promise<void> {
  const result = await withContext(async (ctx) => {
    return create(ctx, server, args, opts).catch((err: unknown) => {
      throw isSkepError(err) && err.code === 'workload_exists' ? alreadyExists(ctx, err) : err;
    });
  });
  await startAndReport(result, opts);
}

/** The workload `skep run` asks for, created (its runner launched), not yet waited for. */
async function create(
  ctx: ApiContext,
  server: string | undefined,
  args: string[],
  opts: RunOptions,
): Promise<{ name: string; port: number }> {
  const verification = await imageVerificationOf(opts);
  if (opts.fromConfig !== undefined) {
    if (server !== undefined) throw new UsageError('give either a server or --from-config, not both');
    if (verification !== undefined)
      throw new UsageError(
        '--image-verification applies to a server named here; with --from-config, set image_verification in the file',
      );
    const text = readInputFile(opts.fromConfig, { dashIsStdin: false });
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch (err) {
      throw new SkepError(
        'invalid_config',
        `${opts.fromConfig} is not valid JSON (${(err as Error).message}); 'skep export <name> <file>' writes a run configuration`,
      );
    }
    return ctx.workloads.createFromConfig(raw, {
      ...definedOnly({ name: opts.name, port: opts.proxyPort, autostart: opts.autostart }),
    });
  }
  if (server === undefined) throw new UsageError('name a server to run, or use --from-config <file>');
  const source = await ctx.workloads.sourceFor(absoluteCommand(server));
  // The image decides whether path arguments are local (a registry entry names one too).
  const image =
    args.length === 0 || source.image !== undefined || source.server === undefined
      ? (source.image ?? '')
      : ((await ctx.workloads.resolveServer(source.server)).image ?? '');
  const volumes = opts.volume.map(parseVolumeFlag);
  const entry =
    source.server === undefined ||
    (volumes.length === 0 && opts.permissionProfile === undefined && verification === undefined)
      ? undefined
      : await ctx.workloads.resolveServer(source.server);
  if (verification !== undefined && verification !== null)
    requireVerifiable(source.image ?? entry?.image, verification, entry?.provenance?.public_key);
  const baseProfile =
    opts.permissionProfile !== undefined
      ? resolvePermissionProfile(
          undefined,
          ['none', 'network'].includes(opts.permissionProfile)
            ? opts.permissionProfile
            : resolve(opts.permissionProfile),
        )
      : entry?.permissions;
  const request: CreateWorkloadRequest = {
    ...source,
    ...grantsOf(source.image ?? entry?.image ?? image, volumes, baseProfile),
    ...definedOnly({ name: opts.name, group: opts.group }),
    ...(args.length === 0 ? {} : { cmd_arguments: absoluteArgs(image, args) }),
    ...(opts.env.length === 0 ? {} : { env_vars: parseEnv(opts.env) }),
    ...(opts.secret.length === 0 ? {} : { secrets: opts.secret.map(parseSecretFlag) }),
    ...definedOnly({ transport: opts.transport as Transport | undefined }),
    ...definedOnly({ proxy_port: opts.proxyPort, target_port: opts.targetPort }),
    ...(opts.proxyMode === undefined ? {} : { proxy_mode: opts.proxyMode as 'sse' | 'streamable-http' }),
    ...(opts.tools === undefined ? {} : { tools: opts.tools.split(',').filter((t) => t !== '') }),
    ...definedOnly({ sandbox: opts.sandbox as 'auto' | 'bwrap' | 'off' | undefined }),
    ...(opts.openToLocalUsers === true ? { endpoint_access: 'anyone-on-this-machine' as const } : {}),
    ...definedOnly({ autostart: opts.autostart }),
  };
  if (request.transport !== undefined && !['stdio', 'sse', 'streamable-http'].includes(request.transport)) {
    throw new UsageError(`invalid --transport '${request.transport}': use stdio, sse or streamable-http`);
  }
  if (request.sandbox !== undefined && !['auto', 'bwrap', 'off'].includes(request.sandbox))
    throw new UsageError(`invalid --sandbox '${request.sandbox}': use auto, bwrap or off`);
  // `default` is what a create without `guardrails_config` gets; `off` turns the stage off.
  if (opts.guardrails === 'off') request.guardrails_config = { enabled: false };
  else if (opts.guardrails !== undefined && opts.guardrails !== 'default')
    throw new UsageError(`invalid --guardrails '${opts.guardrails}': use default or off`);
  if (verification === undefined) return ctx.workloads.create(request);
  return ctx.workloads.create(request, { imageVerification: verification }).catch((err: unknown) => {
    // The run configuration refuses `image_verification` where no image runs (a remote
    // server, a local process); the user typed the flag, so the message names it.
    if (isSkepError(err) && err.code === 'unsupported_field' && err.message.startsWith('image_verification '))
      throw new SkepError(
        'unsupported_field',
        `--image-verification${err.message.slice('image_verification'.length)}`,
        { cause: err },
      );
    throw err;
  });
}

/**
 * `--image-verification` values: ToolHive's `warn`, `enabled` and `disabled`, and `enforce`,
 * the run configuration's word for `enabled`. `null`: no check at all.
 */
const IMAGE_VERIFICATION_POLICIES: Readonly<Record<string, 'warn' | 'enforce' | null>> = {
  warn: 'warn',
  enabled: 'enforce',
  enforce: 'enforce',
  disabled: null,
};

type ImageVerificationChange = NonNullable<CreateOptions['imageVerification']>;

/** Public key files are a few hundred bytes; anything this large is not one. */
const MAX_KEY_FILE_BYTES = 64 * 1024;

/**
 * `--image-verification`, `--image-verification-key` and the keyless flags as the change they
 * make to the run configuration's `image_verification`: undefined keeps the default (a registry
 * entry that names its signer is checked under `warn`), null turns the check off; otherwise the
 * policy, and the keys and keyless fields that replace the entry's. A key comes from a file,
 * never from the command line; the trusted root is kept as the absolute path of its file, or
 * as the built-in name `sigstore-public-good` (fetched by the runner, through TUF).
 */
async function imageVerificationOf(opts: RunOptions): Promise<ImageVerificationChange | null | undefined> {
  const files = opts.imageVerificationKey;
  const keyless = definedOnly({
    trusted_root:
      opts.imageVerificationTrustedRoot && (await trustedRootOf(opts.imageVerificationTrustedRoot)),
    signer_identity: opts.imageVerificationIdentity,
    signer_identity_regexp: opts.imageVerificationIdentityRegexp,
    cert_issuer: opts.imageVerificationIssuer,
  });
  const anyKeyless = Object.keys(keyless).length > 0;
  if (opts.imageVerification === undefined && files.length === 0 && !anyKeyless) return undefined;
  const value = opts.imageVerification ?? 'warn';
  const policy = Object.hasOwn(IMAGE_VERIFICATION_POLICIES, value)
    ? IMAGE_VERIFICATION_POLICIES[value]
    : undefined;
  if (policy === undefined)
    throw new UsageError(
      `invalid --image-verification '${value}': use warn, enabled (or enforce) or disabled`,
    );
  if (policy === null) {
    if (files.length > 0 || anyKeyless)
      throw new UsageError(
        '--image-verification disabled checks nothing: drop the other --image-verification-* flags, or use warn or enabled',
      );
    return null;
  }
  if (opts.imageVerificationIdentity !== undefined && opts.imageVerificationIdentityRegexp !== undefined)
    throw new UsageError(
      'give --image-verification-identity or --image-verification-identity-regexp, not both',
    );
  return {
    policy,
    ...(files.length === 0 ? {} : { public_keys: files.map(readPublicKeyFile) }),
    ...keyless,
  };
}

/**
 * The built-in trusted root's name as it is, or the trusted root file's absolute path once it is
 * known to be readable JSON. The name's module is loaded only when the flag is given.
 */
async function trustedRootOf(file: string): Promise<string> {
  const roots = await import('../../../protocol/sigstore-trusted-root.js');
  if (file === roots.PUBLIC_GOOD_TRUSTED_ROOT) return file;
  const flag = `--image-verification-trusted-root ${file}`;
  const path = resolve(file);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const hint = (err as NodeJS.ErrnoException).code === 'ENOENT' ? roots.notANameHint(file) : '';
    throw new SkepError('invalid_path', `${flag}: cannot read it: ${(err as Error).message}${hint}`, {
      cause: err,
    });
  }
  try {
    JSON.parse(text);
  } catch {
    throw new SkepError('invalid_config', `${flag}: not JSON (a Sigstore trusted_root.json is)`);
  }
  return path;
}

/**
 * The public key in `file`, as SPKI PEM. Only the public half is ever stored: a private key
 * given by mistake is refused, not turned into its public key, so that the user learns that
 * the file they are passing around holds a secret.
 */
function readPublicKeyFile(file: string): string {
  const flag = `--image-verification-key ${file}`;
  let text: string;
  try {
    if (statSync(file).size > MAX_KEY_FILE_BYTES)
      throw new Error(`larger than ${MAX_KEY_FILE_BYTES} bytes, not a public key`);
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new SkepError('invalid_path', `${flag}: cannot read it: ${(err as Error).message}`, { cause: err });
  }
  if (/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(text))
    throw new SkepError(
      'invalid_config',
      `${flag} is a private key: give its public key (cosign public-key --key <file> prints it)`,
    );
  let key: KeyObject;
  try {
    key = createPublicKey({ key: text, format: 'pem' });
  } catch {
    throw new SkepError('invalid_config', `${flag}: not a PEM public key (-----BEGIN PUBLIC KEY-----)`);
  }
  if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1')
    throw new SkepError(
      'invalid_config',
      `${flag}: an ECDSA P-256 key is needed (what cosign generate-key-pair makes), not ${describeKey(key)}`,
    );
  return key.export({ type: 'spki', format: 'pem' }).toString();
}

function describeKey(key: KeyObject): string {
  const curve = key.asymmetricKeyDetails?.namedCurve;
  return `${key.asymmetricKeyType ?? 'an unknown key type'}${curve === undefined ? '' : ` ${curve}`}`;
}

/**
 * What `--image-verification` can check: a container image — not a package or a local command
 * (which may still run in a container, from a base image), nor a remote URL (no image at all:
 * the run configuration's check refuses it by name). `enabled` needs a trusted key (given or the
 * registry entry's) or a trusted root for keyless signatures: without either nothing could pass.
 */
function requireVerifiable(
  image: string | undefined,
  verification: ImageVerificationChange,
  entryKey: string | undefined,
): void {
  if (image === undefined) return;
  if (/^(npx|uvx|cmd):\/\//.test(image))
    throw new SkepError(
      'unsupported_field',
      `--image-verification is not supported for ${image}: it checks a container image's signature, and this is a package or a local command; remove it`,
    );
  if (
    verification.policy === 'enforce' &&
    verification.public_keys === undefined &&
    verification.trusted_root === undefined &&
    entryKey === undefined
  )
    throw new UsageError(
      '--image-verification enabled needs something to verify against: a trusted public key ' +
        '(--image-verification-key <file>) or, for keyless signatures, a Sigstore trusted root ' +
        '(--image-verification-trusted-root <trusted_root.json | sigstore-public-good>)',
    );
}

async function startAndReport(result: { name: string; port: number }, opts: RunOptions): Promise<void> {
  const started = await withContext(async (ctx) => {
    // A new workload never worked: a failed start is given up on, not retried for minutes, and
    // leaves nothing behind unless asked.
    const outcome = await awaitStart(
      ctx,
      result.name,
      opts.wait,
      opts.keepOnFailure === true ? 'keep' : 'remove',
    );
    const url = ctx.workloads.list({ all: true }).find((w) => w.name === result.name)?.url;
    return { url, authorizationUrl: outcome.kind === 'authorization' ? outcome.url : undefined };
  });
  const { url, authorizationUrl } = started;
  if (opts.json === true)
    printJson({
      ...result,
      url,
      ...definedOnly({ authorization_url: authorizationUrl }),
    });
  else if (authorizationUrl !== undefined)
    process.stdout.write(
      `workload ${result.name} needs you to authorize access to the remote server; open:\n  ${terminalSafe(authorizationUrl)}\n` +
        `it serves ${url ?? `port ${result.port}`} once you have logged in\n`,
    );
  else process.stdout.write(`workload ${result.name} started: ${url ?? `port ${result.port}`}\n`);
}

export async function upgradeCheck(
  name: string | undefined,
  opts: JsonOpt & { all?: boolean; group?: string },
): Promise<void> {
  const results = await withContext(async (ctx) =>
    name !== undefined
      ? [await ctx.workloads.upgradeCheck(name)]
      : ctx.workloads.upgradeCheckAll({
          all: opts.all === true,
          ...definedOnly({ group: opts.group }),
        }),
  );
  printListing(
    opts,
    name !== undefined ? { result: results[0] } : { results },
    ['NAME', 'STATUS', 'CURRENT', 'CANDIDATE', 'NEEDS'],
    results.map((r) => [
      r.workload_name,
      r.status,
      r.current_image,
      r.candidate_image ?? '',
      (r.env_var_drift?.added ?? []).map((v) => v.name).join(','),
    ]),
  );
}

export async function upgrade(
  name: string,
  opts: JsonOpt & { env: string[]; secret: string[] },
): Promise<void> {
  const result = await withContext((ctx) =>
    ctx.workloads.upgrade(name, {
      ...(opts.env.length === 0 ? {} : { env: parseEnv(opts.env) }),
      ...(opts.secret.length === 0 ? {} : { secrets: opts.secret }),
    }),
  );
  printOutcome(opts, { result }, `workload ${name}: ${result.status} (${result.current_image})`);
}

export async function stopOrRemove(
  verb: 'stop' | 'rm',
  names: string[],
  opts: { group?: string },
): Promise<void> {
  requireTargets(verb, names, opts.group);
  const done = await withContext(async (ctx) => {
    const targets = ctx.workloads.bulk(verb === 'rm' ? 'delete' : verb, bulkRequest(names, opts.group));
    await ctx.workloads.settled();
    return targets;
  });
  for (const name of done) process.stdout.write(`${name}: ${verb === 'rm' ? 'removed' : 'stopped'}\n`);
}

export async function restart(names: string[], opts: { group?: string; wait?: number }): Promise<void> {
  requireTargets('restart', names, opts.group);
  await withContext(async (ctx) => {
    const targets = ctx.workloads.bulk('restart', bulkRequest(names, opts.group));
    // Read before the new runners record anything: did each ever serve?
    const onceWorked = new Map(targets.map((n) => [n, ctx.workloads.rows.get(n)?.startedAt !== undefined]));
    await ctx.workloads.settled();
    let failed = 0;
    for (const name of targets) {
      try {
        const outcome = await awaitStart(
          ctx,
          name,
          opts.wait,
          onceWorked.get(name) === true ? 'retry' : 'keep',
        );
        process.stdout.write(
          outcome.kind === 'authorization'
            ? `${name}: restarted; it needs you to authorize access to the remote server; open:\n  ${terminalSafe(outcome.url)}\n`
            : `${name}: restarted\n`,
        );
      } catch (err) {
        if (!(err instanceof SkepError)) throw err;
        failed++;
        process.stderr.write(`error: ${terminalSafe(err.message)}\n`);
      }
    }
    if (failed > 0) process.exitCode = 1;
  });
}

export async function logs(
  name: string,
  opts: { follow?: boolean; proxy?: boolean; lines: number; raw?: boolean },
): Promise<void> {
  const file = await withContext((ctx) =>
    ctx.workloads.logFile(name, opts.proxy === true ? 'proxy' : 'server'),
  );
  // The server wrote this log: a terminal must not act on its escape sequences. Unless --raw,
  // the runner's JSON lines are rendered and repeats collapsed (log-view.ts).
  const view = opts.raw === true ? undefined : new LogView({ colour: wantsColour(process.stdout) });
  const show = (text: string) =>
    process.stdout.write(view === undefined ? terminalSafe(text) : view.write(text));
  if (opts.lines > 0) show(tailFile(file, opts.lines));
  if (opts.follow === true) await follow(file, show);
  if (view !== undefined) process.stdout.write(view.end());
}

export async function exportConfig(name: string, file: string | undefined): Promise<void> {
  const config = await withContext((ctx) => ctx.workloads.exportConfig(name));
  const text = `${JSON.stringify(config, null, 2)}\n`;
  if (file === undefined) process.stdout.write(text);
  else {
    await writeFileAtomic(file, text, 0o600);
    process.stdout.write(`run configuration of ${name} written to ${file}\n`);
  }
}

/** `skep stop|restart|rm` needs names or a group; saying so beats the API's wording. */
function requireTargets(verb: string, names: string[], group: string | undefined): void {
  if (names.length === 0 && group === undefined)
    throw new UsageError(
      `name the workloads to ${verb === 'rm' ? 'remove' : verb} (skep ${verb} <name>...), or give --group <group>; 'skep list --all' lists them`,
    );
}

function bulkRequest(names: string[], group: string | undefined): { names?: string[]; group?: string } {
  if (group === undefined) return { names };
  return names.length > 0 ? { names, group } : { group };
}

/**
 * Shows what is appended to `file` until interrupted (follows rotation by re-opening): a UTF-8
 * character or a CRLF cut by a read is completed by the next one.
 */
async function follow(file: string, show: (text: string) => void): Promise<void> {
  let offset = sizeOf(file);
  const decoder = new StringDecoder('utf8');
  let heldCr = '';
  let stopped = false;
  const stop = () => {
    stopped = true;
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  while (!stopped) {
    await new Promise((r) => setTimeout(r, 300));
    const size = sizeOf(file);
    if (size < offset) offset = 0; // rotated
    if (size > offset) {
      const fd = openSync(file, 'r');
      const buffer = Buffer.alloc(size - offset);
      readSync(fd, buffer, 0, buffer.length, offset);
      closeSync(fd);
      const text = heldCr + decoder.write(buffer);
      heldCr = text.endsWith('\r') ? '\r' : '';
      show(heldCr === '' ? text : text.slice(0, -1));
      offset = size;
    }
  }
}

function sizeOf(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}
