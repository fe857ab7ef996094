/**
 * The workload lifecycle: create, list, inspect, export, update (merge), stop, restart,
 * delete (one or in bulk) and resume on boot. Every request is validated completely before
 * anything is written. The manager records the desired state and spawns or signals the
 * detached runner; the runner records what it observes (status, status_context).
 * Operations on one workload are serialised; different workloads proceed in parallel.
 * Requests become run configurations in `config-builder.ts` (checked by `config-checks.ts`);
 * what the API shows of a workload is built in `views.ts`.
 */
import type { SkepConfig } from '../config/index.js';
import type { GroupMembers, GroupService } from '../groups/index.js';
import { prunePackageStores, removeSandboxHome } from '../dataplane/runtime/index.js';
import { describeError, type Logger, SkepError, silentLogger } from '../shared/index.js';
import type { Store } from '../store/index.js';
import {
  applyRequest,
  checkRegistryFields,
  configFromCreate,
  configFromFile,
  requireEntryInputs,
  IMAGE_SCHEMES,
  looksLikeImage,
} from './config-builder.js';
import {
  checkExposure,
  checkHonouredFields,
  checkRunnable,
  type ConfigCheckContext,
  validateConfig,
  type WorkloadContainers,
} from './config-checks.js';
import { proxyUrlOf } from './exposure.js';
import { removeLogs, runnerLogPath, serverLogPath, tailFile } from './log-files.js';
import { validateWorkloadName } from './names.js';
import { allocatePort, portFree } from './ports.js';
import {
  type RegistryServerSpec,
  requireRegistryServer,
  type ResolveRegistryServer,
} from './registry-server.js';
import { parseRunConfig, type RunConfig } from './run-config.js';
import { killGroup, runnerAlive, type SpawnRunner, spawnRunner, stopRunner } from './runner-process.js';
import type {
  BulkRequest,
  CreateWorkloadRequest,
  UpdateWorkloadRequest,
  WorkloadDetail,
  WorkloadSummary,
} from '../schemas/index.js';
import { parseSecretReference as parseSecretRef, requireSecrets, type SecretLookup } from './secrets.js';
import { checkUpgrade, missingRequired, type UpgradeCheckResult, type UpgradeRequest } from './upgrade.js';
import { detailOf, observedRow, summariesOf } from './views.js';
import { type WorkloadRow, type WorkloadStatus, WorkloadStore } from './workload-store.js';

export type WorkloadChangeKind = 'started' | 'stopped' | 'removed' | 'updated';
export interface WorkloadChange {
  name: string;
  kind: WorkloadChangeKind;
  group: string;
  port: number;
  url: string;
}
export type WorkloadChangeListener = (change: WorkloadChange) => void | Promise<void>;

export interface WorkloadManagerOptions {
  store: Store;
  config: SkepConfig;
  groups: GroupService;
  secretLookup: SecretLookup;
  resolveRegistryServer?: ResolveRegistryServer;
  logger?: Logger;
  /** Starts a runner; the default spawns `skep runner <name>` detached. */
  spawnRunner?: SpawnRunner;
  /** SIGTERM → SIGKILL grace when stopping a runner (ms). */
  stopGraceMs?: number;
  /** The container runtime seam: refuses images when no engine is usable; removes a deleted workload's containers. */
  containers?: WorkloadContainers;
}

/** What `skep run` sets at create beyond the API's request. */
export interface CreateOptions {
  /**
   * `--image-verification`: the policy (and, when given, the trusted keys, trusted root and
   * keyless identity) over the registry entry's check, the rest of its provenance kept; null: no check.
   */
  imageVerification?: Pick<
    NonNullable<RunConfig['image_verification']>,
    'policy' | 'public_keys' | 'trusted_root' | 'signer_identity' | 'signer_identity_regexp' | 'cert_issuer'
  > | null;
}

export interface ListOptions {
  all?: boolean;
  group?: string;
}

export type BulkAction = 'stop' | 'restart' | 'delete';

export class WorkloadManager implements GroupMembers {
  readonly rows: WorkloadStore;
  readonly secretLookup: SecretLookup;
  readonly #config: SkepConfig;
  readonly #groups: GroupService;
  readonly #logger: Logger;
  readonly #spawn: SpawnRunner;
  readonly #stopGraceMs: number;
  readonly #resolveRegistry: ResolveRegistryServer | undefined;
  readonly #containers: WorkloadContainers | undefined;
  readonly #checks: ConfigCheckContext;
  readonly #listeners = new Set<WorkloadChangeListener>();
  readonly #queues = new Map<string, Promise<unknown>>();
  readonly #background = new Set<Promise<unknown>>();
  #closed = false;

  constructor(options: WorkloadManagerOptions) {
    this.rows = new WorkloadStore(options.store, { parseConfig: parseRunConfig });
    this.#config = options.config;
    this.#groups = options.groups;
    this.secretLookup = options.secretLookup;
    this.#resolveRegistry = options.resolveRegistryServer;
    this.#logger = options.logger ?? silentLogger;
    this.#spawn = options.spawnRunner ?? spawnRunner;
    this.#stopGraceMs = options.stopGraceMs ?? 15_000;
    this.#containers = options.containers;
    this.#checks = {
      config: options.config,
      groups: options.groups,
      secretLookup: options.secretLookup,
      containers: options.containers,
      groupBackends: (group, self) =>
        this.rows
          .list(group)
          .filter((r) => r.name !== self && r.config.vmcp === undefined)
          .map((r) => ({ name: r.name, tools: r.status === 'running' ? r.tools : undefined })),
    };
  }

  /** Registers a listener called after a workload starts, stops, is removed or changes port/group. */
  onChange(listener: WorkloadChangeListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  // ---------------------------------------------------------------- create

  async create(
    request: CreateWorkloadRequest,
    options: CreateOptions = {},
  ): Promise<{ name: string; port: number }> {
    const config = await this.#configFromCreate(request, options);
    return this.#createFrom(config, request.autostart ?? true);
  }

  /** `skep run --from-config`: a RunConfig (e.g. an export) becomes a new workload. */
  async createFromConfig(
    value: unknown,
    overrides: { name?: string; port?: number; autostart?: boolean } = {},
  ): Promise<{ name: string; port: number }> {
    const config = configFromFile(value, overrides.name);
    // Derived from the name, as on create: an export names the workload it came from.
    config.container_name = config.name;
    checkExposure(config);
    this.#groups.require(config.group);
    for (const text of config.secrets) parseSecretRef(text);
    await requireSecrets(config.secrets.map(parseSecretRef), this.secretLookup);
    await checkRunnable(this.#checks, config);
    await checkHonouredFields(this.#checks, config);
    if (this.rows.get(config.name) !== undefined) {
      throw new SkepError('workload_exists', `workload '${config.name}' already exists`, {
        details: { name: config.name },
      });
    }
    // The file's port is a preference (an export names the original workload's port, which
    // may still be taken); an explicit --proxy-port must be free.
    const preferred = config.port;
    config.port =
      overrides.port !== undefined
        ? await this.#choosePort(overrides.port, config.host, undefined)
        : await this.#choosePort(preferred, config.host, undefined).catch(() =>
            this.#choosePort(0, config.host, undefined),
          );
    if (config.transport !== 'stdio' && config.remote_url === undefined && (config.target_port ?? 0) === 0) {
      config.target_port = await this.#allocateTargetPort();
    }
    return this.#createFrom(config, overrides.autostart ?? true);
  }

  async #createFrom(config: RunConfig, autostart: boolean): Promise<{ name: string; port: number }> {
    for (let attempt = 0; ; attempt++) {
      const result = this.rows.insert(config, 'starting', 'running', { autostart });
      if (result === 'ok') break;
      if (result === 'name_taken')
        throw new SkepError('workload_exists', `workload '${config.name}' already exists`, {
          details: { name: config.name },
        });
      // Another create took the port between the check and the insert: pick again.
      if (attempt >= 5)
        throw new SkepError('port_unavailable', `proxy port ${config.port} is taken by another workload`);
      config.port = await this.#choosePort(0, config.host, undefined);
    }
    await this.#serial(config.name, () => this.#launch(config.name));
    return { name: config.name, port: config.port };
  }

  async #configFromCreate(request: CreateWorkloadRequest, options: CreateOptions): Promise<RunConfig> {
    // Source of the server: image, url, or registry+server (resolved through the seam).
    checkRegistryFields(request);
    const registryEntry: RegistryServerSpec | undefined =
      request.server === undefined ? undefined : await this.resolveServer(request.server);
    const config = configFromCreate(request, registryEntry);
    // Before the checks, so that a policy where no image runs is refused like any other field.
    const verification = options.imageVerification;
    if (verification === null) delete config.image_verification;
    else if (verification !== undefined)
      config.image_verification = { ...config.image_verification, ...verification };
    if (request.server !== undefined) requireEntryInputs(request.server, registryEntry, config);
    const explicitName = request.name !== undefined && request.name !== '';
    await validateConfig(this.#checks, config);
    if (this.rows.get(config.name) !== undefined) {
      throw new SkepError(
        'workload_exists',
        explicitName
          ? `workload '${config.name}' already exists`
          : `workload '${config.name}' already exists (the name comes from the server; give a name to run a second one)`,
        { details: { name: config.name } },
      );
    }
    config.port = await this.#choosePort(request.proxy_port ?? 0, config.host, undefined);
    if (config.transport !== 'stdio' && config.remote_url === undefined && (config.target_port ?? 0) === 0) {
      config.target_port = await this.#allocateTargetPort();
    }
    return config;
  }

  /** Looks a server up in the registry through the injected seam. */
  resolveServer(name: string): Promise<RegistryServerSpec> {
    return requireRegistryServer(this.#resolveRegistry, name);
  }

  /**
   * Turns what a user typed (`skep run <ref>`) into create fields: a scheme or an image is
   * used as is; anything else is a registry server name.
   */
  async sourceFor(
    ref: string,
  ): Promise<Pick<CreateWorkloadRequest, 'image' | 'url' | 'registry' | 'server'>> {
    if (IMAGE_SCHEMES.test(ref)) return { image: ref };
    if (/^https?:\/\//.test(ref)) return { url: ref };
    if (looksLikeImage(ref)) return { image: ref };
    await this.resolveServer(ref);
    return { registry: 'default', server: ref };
  }

  /** Explicit port: must be free (or already this workload's); 0: allocate one in range. */
  async #choosePort(requested: number, host: string, owner: string | undefined): Promise<number> {
    if (requested !== 0) {
      const holder = this.rows.portOwner(requested);
      if (holder !== undefined && holder !== owner) {
        throw new SkepError(
          'port_unavailable',
          `requested proxy port ${requested} is used by workload '${holder}'`,
        );
      }
      if (holder === undefined && !(await portFree(requested, bindHostFor(host)))) {
        throw new SkepError('port_unavailable', `requested proxy port ${requested} is not available`);
      }
      return requested;
    }
    const { port_range_start: start, port_range_end: end } = this.#config.workloads;
    const port = await allocatePort(start, end, this.rows.ports(), bindHostFor(host));
    if (port === undefined) throw new SkepError('port_unavailable', `no free proxy port in ${start}-${end}`);
    return port;
  }

  async #allocateTargetPort(): Promise<number> {
    const { port_range_start: start, port_range_end: end } = this.#config.workloads;
    const port = await allocatePort(start, end, this.rows.ports());
    if (port === undefined) throw new SkepError('port_unavailable', `no free target port in ${start}-${end}`);
    return port;
  }

  // ---------------------------------------------------------------- read

  list(options: ListOptions = {}): WorkloadSummary[] {
    if (options.group !== undefined) this.#groups.require(options.group);
    return summariesOf(this.#config, this.rows.list(options.group), options.all === true);
  }

  /** Throws `invalid_name` / `workload_not_found`. */
  #require(name: string): WorkloadRow {
    validateWorkloadName(name);
    const row = this.rows.get(name);
    if (row === undefined) throw new SkepError('workload_not_found', `workload '${name}' not found`);
    return row;
  }

  get(name: string): WorkloadDetail {
    return detailOf(this.#config, observedRow(this.#require(name)));
  }

  status(name: string): { status: WorkloadStatus; status_context: string } {
    const row = observedRow(this.#require(name));
    return { status: row.status, status_context: row.statusContext };
  }

  exportConfig(name: string): RunConfig {
    return this.#require(name).config;
  }

  logs(name: string, lines = 1000): string {
    this.#require(name);
    return tailFile(serverLogPath(this.#config.paths.logsDir, name), lines);
  }

  proxyLogs(name: string, lines = 1000): string {
    this.#require(name);
    return tailFile(runnerLogPath(this.#config.paths.logsDir, name), lines);
  }

  logFile(name: string, which: 'server' | 'proxy'): string {
    this.#require(name);
    return which === 'server'
      ? serverLogPath(this.#config.paths.logsDir, name)
      : runnerLogPath(this.#config.paths.logsDir, name);
  }

  // ---------------------------------------------------------------- update

  /**
   * Merge update; restarts the workload when it was meant to be running. `autostart` is a
   * setting of the workload, not of its run configuration: a request that sets only it changes
   * what `skep serve` does at its next start and restarts nothing now.
   */
  async update(name: string, request: UpdateWorkloadRequest): Promise<{ name: string; port: number }> {
    const row = this.#require(name);
    const { autostart, ...configFields } = request;
    if (autostart !== undefined && Object.keys(configFields).length === 0) {
      this.rows.setAutostart(name, autostart);
      return { name, port: row.port };
    }
    const next = applyRequest(row.config, request);
    next.name = name;
    await validateConfig(this.#checks, next);
    const portChanged =
      request.proxy_port !== undefined && request.proxy_port !== 0 && request.proxy_port !== row.port;
    if (portChanged) next.port = await this.#choosePort(request.proxy_port as number, next.host, name);
    if (next.transport !== 'stdio' && next.remote_url === undefined && (next.target_port ?? 0) === 0) {
      next.target_port = await this.#allocateTargetPort();
    }
    await this.#serial(name, async () => {
      const current = this.rows.get(name);
      if (current === undefined) throw new SkepError('workload_not_found', `workload '${name}' not found`);
      const wasRunning = current.desired === 'running';
      if (wasRunning) await this.#halt(current, 'stopping', 'configuration updated');
      this.rows.saveConfig(next);
      if (autostart !== undefined) this.rows.setAutostart(name, autostart);
      if (wasRunning) await this.#launch(name);
      else this.#emit(name, 'updated');
    });
    return { name, port: next.port };
  }

  // ---------------------------------------------------------------- registry upgrades

  /** Whether the registry entry the workload came from names another image now (nothing is pulled). */
  upgradeCheck(name: string): Promise<UpgradeCheckResult> {
    return checkUpgrade(this.#require(name).config, this.#resolveRegistry);
  }

  /** `upgradeCheck` for every listed workload (running only unless `all`), in list order. */
  async upgradeCheckAll(options: ListOptions = {}): Promise<UpgradeCheckResult[]> {
    const results: UpgradeCheckResult[] = [];
    for (const w of this.list(options)) results.push(await this.upgradeCheck(w.name));
    return results;
  }

  /**
   * Moves a registry-sourced workload to the image (or URL) its entry names now, keeping the
   * rest of its configuration; `env` and `secrets` (references only) are merged in. A no-op
   * that returns the check when there is nothing to upgrade. 422 when the new entry requires
   * variables that would still be missing. Returns the check after the upgrade.
   */
  async upgrade(name: string, request: UpgradeRequest = {}): Promise<UpgradeCheckResult> {
    const row = this.#require(name);
    const added = (request.secrets ?? []).map((text) => parseSecretRef(text));
    const check = await checkUpgrade(row.config, this.#resolveRegistry);
    if (check.status !== 'upgrade-available') return check;
    const missing = missingRequired(
      check,
      new Set([...Object.keys(request.env ?? {}), ...added.map((r) => r.target)]),
    );
    if (missing.length > 0) {
      throw new SkepError(
        'upgrade_needs_input',
        `the new version of '${check.registry_server}' requires ${missing.join(', ')}: pass ${missing.length === 1 ? 'it' : 'them'} in env or secrets`,
      );
    }
    const secrets = new Map(
      row.config.secrets.map((text) => {
        const ref = parseSecretRef(text);
        return [ref.target, ref] as const;
      }),
    );
    for (const ref of added) secrets.set(ref.target, ref);
    const candidate = check.candidate_image as string;
    await this.update(name, {
      // A remote entry names a URL; anything else is an image or package reference.
      ...(/^https?:\/\//.test(candidate) ? { url: candidate } : { image: candidate }),
      ...(request.env === undefined ? {} : { env_vars: { ...row.config.env_vars, ...request.env } }),
      ...(added.length === 0 ? {} : { secrets: [...secrets.values()] }),
    });
    return checkUpgrade(this.#require(name).config, this.#resolveRegistry);
  }

  // ---------------------------------------------------------------- stop / restart / delete

  /** Validates, then stops in the background (202 semantics). */
  stop(name: string): void {
    this.#require(name);
    this.#inBackground(name, 'stop', () => this.stopNow(name));
  }

  restart(name: string): void {
    this.#require(name);
    this.#inBackground(name, 'restart', () => this.restartNow(name));
  }

  delete(name: string): void {
    this.#require(name);
    this.rows.setStatus(name, { status: 'removing', context: '' });
    this.#inBackground(name, 'delete', () => this.deleteNow(name));
  }

  async stopNow(name: string): Promise<void> {
    await this.#serial(name, async () => {
      const row = this.rows.get(name);
      if (row === undefined) return;
      await this.#halt(row, 'stopping', '');
      this.rows.setStatus(name, { status: 'stopped', context: '', runnerPid: null, desired: 'stopped' });
      this.#emit(name, 'stopped');
    });
  }

  async restartNow(name: string): Promise<void> {
    await this.#serial(name, async () => {
      const row = this.rows.get(name);
      if (row === undefined) return;
      await this.#halt(row, 'stopping', 'restarting');
      await this.#launch(name);
    });
  }

  /**
   * A start that never worked was given up on (`skep run`, `skep restart`): the runner stops
   * (it would retry with backoff for minutes) and the status stays `error` with `context`, the
   * cause. Like a runner that gave up, the workload is not resumed until it is restarted.
   */
  async abandonStart(name: string, context: string): Promise<void> {
    await this.#serial(name, async () => {
      const row = this.rows.get(name);
      if (row === undefined) return;
      await this.#halt(row, 'stopping', context);
      this.rows.setStatus(name, { status: 'error', context, runnerPid: null });
      this.#emit(name, 'stopped');
    });
  }

  async deleteNow(name: string): Promise<void> {
    await this.#serial(name, async () => {
      const row = this.rows.get(name);
      if (row === undefined) return;
      this.rows.setStatus(name, { status: 'removing', context: '', desired: 'stopped' });
      await stopRunner(row.runnerPid, name, this.#stopGraceMs);
      // A runner that had to be killed could not remove its containers; do it here.
      await this.#containers?.remove(name).catch((err: unknown) => {
        this.#logger.warn({ workload: name, err }, 'cannot remove the containers');
      });
      this.rows.delete(name);
      removeLogs(this.#config.paths.logsDir, name, this.#config.workloads.log_files);
      // A later workload of the same name must not inherit this one's files.
      removeSandboxHome(this.#config.paths, name);
      this.#prunePackages(name);
      this.#emit(name, 'removed', row);
    });
  }

  /** Removes the package store entries no remaining workload uses (`skep cache prune` does it on demand). */
  #prunePackages(removed: string): void {
    try {
      const users = this.rows
        .list()
        .map((r) => ({ name: r.name, image: r.config.image, env: r.config.env_vars }));
      for (const entry of prunePackageStores(this.#config.paths.cacheDir, users))
        this.#logger.info(
          { workload: removed, entry: entry.key },
          `removed the unused ${entry.store} package`,
        );
    } catch (err) {
      this.#logger.warn({ workload: removed, err }, 'cannot prune the package stores');
    }
  }

  /**
   * Bulk stop/restart/delete by `names` or `group` (exactly one). Every name is validated
   * and must exist before any work starts (unknown ones → 404 listing them); the work then
   * continues in the background. Returns the affected names.
   */
  bulk(action: BulkAction, request: BulkRequest): string[] {
    const names = this.#bulkTargets(request);
    for (const name of names) {
      if (action === 'delete') this.rows.setStatus(name, { status: 'removing', context: '' });
      this.#inBackground(name, action, () =>
        action === 'stop'
          ? this.stopNow(name)
          : action === 'restart'
            ? this.restartNow(name)
            : this.deleteNow(name),
      );
    }
    return names;
  }

  #bulkTargets(request: BulkRequest): string[] {
    const hasNames = request.names !== undefined;
    const hasGroup = request.group !== undefined && request.group !== '';
    if (hasNames && hasGroup) throw new SkepError('bad_request', 'cannot specify both names and group');
    if (!hasNames && !hasGroup) throw new SkepError('bad_request', 'must specify either names or group');
    if (hasGroup) {
      this.#groups.require(request.group as string);
      return this.rows.names(request.group);
    }
    const names = [...new Set(request.names)];
    if (names.length === 0)
      throw new SkepError(
        'bad_request',
        "'names' is empty: list at least one workload name, or give 'group'",
      );
    for (const name of names) validateWorkloadName(name);
    const missing = names.filter((n) => this.rows.get(n) === undefined);
    if (missing.length > 0) {
      throw new SkepError(
        'workload_not_found',
        `workload${missing.length > 1 ? 's' : ''} not found: ${missing.join(', ')}; nothing was changed`,
      );
    }
    return names;
  }

  // ---------------------------------------------------------------- groups (GroupMembers)

  workloadsIn(group: string): string[] {
    return this.rows.names(group);
  }

  isVirtual(name: string): boolean {
    return this.rows.get(name)?.config.vmcp !== undefined;
  }

  async deleteWorkloads(group: string): Promise<void> {
    await Promise.all(this.rows.names(group).map((name) => this.deleteNow(name)));
  }

  // ---------------------------------------------------------------- boot

  /**
   * Resume on boot: every workload meant to be running whose runner is gone (reboot, crash,
   * kill) gets a new runner; interrupted deletes are finished; runners that died while
   * stopping are recorded as stopped. Returns the names that were started again.
   */
  reconcile(): Promise<string[]> {
    const run = this.#reconcile();
    const tracked = run.catch(() => undefined);
    this.#background.add(tracked);
    void tracked.finally(() => this.#background.delete(tracked));
    return run;
  }

  async #reconcile(): Promise<string[]> {
    const resumed: string[] = [];
    for (const row of this.rows.list()) {
      if (runnerAlive(row.runnerPid, row.name)) continue;
      if (row.status === 'removing') {
        await this.deleteNow(row.name);
      } else if (row.desired === 'running' && !row.autostart) {
        // `skep run --no-autostart`: its runner is gone (a reboot); it waits for a start.
        this.rows.setStatus(row.name, {
          status: 'stopped',
          context: '',
          runnerPid: null,
          desired: 'stopped',
        });
      } else if (row.desired === 'running') {
        if (row.status === 'error') continue; // gave up on purpose; a restart is the user's call
        if (row.runnerPid !== undefined) killGroup(row.runnerPid);
        this.#logger.info({ workload: row.name }, 'resuming workload whose runner is gone');
        try {
          await this.#serial(row.name, () => this.#launch(row.name));
          resumed.push(row.name);
        } catch (err) {
          // Its status says why (set by the launch); the other workloads still resume.
          this.#logger.warn({ workload: row.name, err }, 'workload not resumed');
        }
      } else if (row.status !== 'stopped') {
        this.rows.setStatus(row.name, { status: 'stopped', context: '', runnerPid: null });
      }
    }
    return resumed;
  }

  /** Waits for background operations started by this manager. */
  async settled(): Promise<void> {
    while (this.#background.size > 0) await Promise.allSettled([...this.#background]);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.settled();
    this.#listeners.clear();
  }

  // ---------------------------------------------------------------- internals

  /** Stops the runner (if any) and records `status` meanwhile; keeps the desired state. */
  async #halt(row: WorkloadRow, status: WorkloadStatus, context: string): Promise<void> {
    if (row.runnerPid === undefined && !runnerAlive(row.runnerPid, row.name)) return;
    this.rows.setStatus(row.name, { status, context });
    await stopRunner(row.runnerPid, row.name, this.#stopGraceMs);
    this.rows.setStatus(row.name, { status: 'stopped', context, runnerPid: null });
  }

  /** Records `starting` and spawns the runner; a spawn failure becomes status `error`. */
  async #launch(name: string): Promise<void> {
    const problem = this.rows.get(name)?.configProblem;
    if (problem !== undefined) {
      const context = `${problem}; 'skep export ${name} <file>', fix the file and 'skep run --from-config' it`;
      this.rows.setStatus(name, { status: 'error', context });
      throw new SkepError('invalid_config', `cannot start '${name}': ${context}`);
    }
    this.rows.setStatus(name, { status: 'starting', context: '', runnerPid: null, desired: 'running' });
    try {
      const pid = this.#spawn(name, this.#config, this.isVirtual(name) ? 'vmcp' : 'server');
      this.rows.setStatus(name, { status: 'starting', context: '', runnerPid: pid });
    } catch (err) {
      this.rows.setStatus(name, {
        status: 'error',
        context: `cannot start the runner: ${describeError(err)}`,
      });
      throw new SkepError('internal_error', `cannot start the runner of '${name}'`, { cause: err });
    }
    this.#emit(name, 'started');
  }

  #serial<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.#queues.get(name) ?? Promise.resolve();
    const next = previous.then(fn, fn);
    const tail = next.catch(() => undefined);
    this.#queues.set(name, tail);
    void tail.then(() => {
      if (this.#queues.get(name) === tail) this.#queues.delete(name);
    });
    return next;
  }

  #inBackground(name: string, what: string, fn: () => Promise<void>): void {
    const task = fn().catch((err: unknown) => {
      this.#logger.error({ workload: name, err }, `background ${what} failed`);
    });
    this.#background.add(task);
    void task.finally(() => this.#background.delete(task));
  }

  #emit(name: string, kind: WorkloadChangeKind, known?: WorkloadRow): void {
    const row = known ?? this.rows.get(name);
    if (row === undefined) return;
    const change: WorkloadChange = {
      name,
      kind,
      group: row.config.group,
      port: row.config.port,
      url: proxyUrlOf(row),
    };
    for (const listener of this.#listeners) {
      try {
        void Promise.resolve(listener(change)).catch((err: unknown) =>
          this.#logger.warn({ workload: name, err }, 'workload change listener failed'),
        );
      } catch (err) {
        this.#logger.warn({ workload: name, err }, 'workload change listener failed');
      }
    }
  }
}

function bindHostFor(host: string): string {
  return host === '' ? '127.0.0.1' : host;
}
