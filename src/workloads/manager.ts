/**
 * The workload lifecycle: create, list, inspect, export, update (merge), stop, restart,
 * delete (one or in bulk) and resume on boot. Every request is validated completely before
 * anything is written. The manager records the desired state and spawns or signals the
 * detached runner; the runner records what it observes (status, status_context).
 * Operations on one workload are serialised; different workloads proceed in parallel.
 */
import type { SkepConfig } from '../config/index.js';
import { DEFAULT_GROUP, type GroupMembers, type GroupService, validateGroupName } from '../groups/index.js';
import {
  checkLocalExecutable,
  checkWorkloadSandbox,
  removeSandboxHome,
  workloadSandbox,
} from '../runtime/index.js';
import { describeError, type Logger, SkepError, silentLogger } from '../shared/index.js';
import type { Store } from '../store/index.js';
import { removeLogs, runnerLogPath, serverLogPath, tailFile } from './log-files.js';
import { allowedOriginsProblem, hostExposureProblem } from './exposure.js';
import { baseNameFor, validateWorkloadName, workloadNameProblem } from './names.js';
import { allocatePort, portFree } from './ports.js';
import { parseRunConfig, RUN_CONFIG_SCHEMA_VERSION, type RunConfig, workloadUrl } from './run-config.js';
import { killGroup, runnerAlive, type SpawnRunner, spawnRunner, stopRunner } from './runner-process.js';
import type {
  BulkRequest,
  CreateWorkloadRequest,
  UpdateWorkloadRequest,
  WorkloadDetail,
  WorkloadSummary,
} from './schemas.js';
import {
  formatSecretReference as formatSecretRef,
  parseSecretReference as parseSecretRef,
  requireSecrets,
  type SecretLookup,
  type SecretReference as SecretRef,
  validateSecretRef,
} from './secrets.js';
import { checkUpgrade, missingRequired, type UpgradeCheckResult } from './upgrade.js';
import { type WorkloadRow, type WorkloadStatus, WorkloadStore } from './workload-store.js';

/** Options of a registry upgrade: extra env values and secret references (`<name>,target=<ENV>`). */
export interface UpgradeRequest {
  env?: Record<string, string>;
  secrets?: string[];
}

/** What a registry entry contributes to a workload (the registry domain implements the lookup). */
export interface RegistryServerSpec {
  /** Image or package reference; '' for a remote server. */
  image: string;
  /** Set for a remote server: the URL the proxy forwards to. */
  url?: string;
  transport?: 'stdio' | 'sse' | 'streamable-http';
  args?: string[];
  env?: Record<string, string>;
  target_port?: number;
  tools?: string[];
  /** The entry's permission profile; applies unless the request brings its own. */
  permissions?: RunConfig['permission_profile'];
  /** The environment variables the entry declares (for upgrade checks; no secret values). */
  envVars?: Array<{
    name: string;
    description?: string;
    required?: boolean;
    secret?: boolean;
    default?: string;
  }>;
}
/** Resolves a registry server name; `undefined` when the registry has no such server. */
export type ResolveRegistryServer = (name: string) => Promise<RegistryServerSpec | undefined>;

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

export interface WorkloadContainers {
  /** Throws `runtime_unavailable` when `image` (a container image) cannot run here. */
  check(image: string): Promise<void>;
  /** Removes the containers, networks and volumes of `name` (best effort). */
  remove(name: string): Promise<void>;
}

export interface ListOptions {
  all?: boolean;
  group?: string;
}

export type BulkAction = 'stop' | 'restart' | 'delete';

const IMAGE_SCHEMES = /^(npx|uvx|cmd):\/\/./;

function looksLikeImage(ref: string): boolean {
  return /[/:@]/.test(ref);
}

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
  }

  /** Registers a listener called after a workload starts, stops, is removed or changes port/group. */
  onChange(listener: WorkloadChangeListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  // ---------------------------------------------------------------- create

  async create(request: CreateWorkloadRequest): Promise<{ name: string; port: number }> {
    const config = await this.#configFromCreate(request);
    return this.#createFrom(config);
  }

  /** `skep run --from-config`: a RunConfig (e.g. an export) becomes a new workload. */
  async createFromConfig(
    value: unknown,
    overrides: { name?: string; port?: number } = {},
  ): Promise<{ name: string; port: number }> {
    const parsed = parseRunConfig(value, 'run configuration file');
    const config: RunConfig = { ...parsed, schema_version: RUN_CONFIG_SCHEMA_VERSION };
    if (overrides.name !== undefined) config.name = overrides.name;
    validateWorkloadName(config.name);
    config.base_name = config.name;
    checkExposure(config);
    this.#groups.require(config.group);
    for (const text of config.secrets) parseSecretRef(text);
    await requireSecrets(config.secrets.map(parseSecretRef), this.secretLookup);
    await this.#checkRunnable(config);
    if (this.rows.get(config.name) !== undefined) {
      throw new SkepError('workload_exists', `workload '${config.name}' already exists`);
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
    return this.#createFrom(config);
  }

  async #createFrom(config: RunConfig): Promise<{ name: string; port: number }> {
    for (let attempt = 0; ; attempt++) {
      const result = this.rows.insert(config, 'starting', 'running');
      if (result === 'ok') break;
      if (result === 'name_taken')
        throw new SkepError('workload_exists', `workload '${config.name}' already exists`);
      // Another create took the port between the check and the insert: pick again.
      if (attempt >= 5)
        throw new SkepError('port_unavailable', `proxy port ${config.port} is taken by another workload`);
      config.port = await this.#choosePort(0, config.host, undefined);
    }
    await this.#serial(config.name, () => this.#launch(config.name));
    return { name: config.name, port: config.port };
  }

  async #configFromCreate(request: CreateWorkloadRequest): Promise<RunConfig> {
    // Source of the server: image, url, or registry+server (resolved through the seam).
    let registryEntry: RegistryServerSpec | undefined;
    if ((request.registry === undefined) !== (request.server === undefined)) {
      throw new SkepError('bad_request', "both 'registry' and 'server' must be specified together");
    }
    if (request.registry !== undefined && request.registry !== 'default') {
      throw new SkepError(
        'registry_not_found',
        `registry '${request.registry}' does not exist; only 'default' is served`,
      );
    }
    if (request.server !== undefined) registryEntry = await this.resolveServer(request.server);
    const sources = [request.image, request.url, registryEntry?.image, registryEntry?.url].filter(
      (s) => s !== undefined && s !== '',
    );
    if (sources.length === 0)
      throw new SkepError('bad_request', "one of 'image', 'url' or 'registry' + 'server' is required");
    if (request.image !== undefined && request.url !== undefined) {
      throw new SkepError('bad_request', "'image' and 'url' cannot be used together");
    }

    const base: RunConfig = parseRunConfig({
      name: '',
      image: registryEntry?.image ?? '',
      ...(registryEntry?.url === undefined ? {} : { remote_url: registryEntry.url }),
      transport: registryEntry?.transport ?? (registryEntry?.url === undefined ? 'stdio' : 'streamable-http'),
      cmd_args: registryEntry?.args ?? [],
      env_vars: registryEntry?.env ?? {},
      ...(registryEntry?.permissions === undefined ? {} : { permission_profile: registryEntry.permissions }),
      ...(registryEntry?.target_port === undefined ? {} : { target_port: registryEntry.target_port }),
      ...(registryEntry?.tools === undefined ? {} : { tools_filter: registryEntry.tools }),
      ...(request.server === undefined ? {} : { registry_server_name: request.server }),
      proxy_mode: 'streamable-http',
      isolate_network: true,
    });
    if (request.url !== undefined && request.transport === undefined) base.transport = 'streamable-http';
    const config = this.#applyRequest(base, request);
    // The entry's defaults stay unless the request sets the same variables.
    if (registryEntry?.env !== undefined) config.env_vars = { ...registryEntry.env, ...config.env_vars };

    const explicitName = request.name !== undefined && request.name !== '';
    if (explicitName) validateWorkloadName(request.name as string);
    const source = config.remote_url ?? (config.image !== '' ? config.image : (request.server ?? 'workload'));
    config.name = explicitName ? (request.name as string) : this.#deriveName(source);
    config.base_name = config.name;
    config.container_name = config.name;
    await this.#validateConfig(config);
    if (explicitName && this.rows.get(config.name) !== undefined) {
      throw new SkepError('workload_exists', `workload '${config.name}' already exists`);
    }
    config.port = await this.#choosePort(request.proxy_port ?? 0, config.host, undefined);
    if (config.transport !== 'stdio' && config.remote_url === undefined && (config.target_port ?? 0) === 0) {
      config.target_port = await this.#allocateTargetPort();
    }
    return config;
  }

  /** Looks a server up in the registry through the injected seam. */
  async resolveServer(name: string): Promise<RegistryServerSpec> {
    if (this.#resolveRegistry === undefined) {
      throw new SkepError(
        'bad_request',
        `'${name}' is not an image or npx://, uvx://, cmd:// reference, and registry lookup is not available in this build`,
      );
    }
    const entry = await this.#resolveRegistry(name);
    if (entry === undefined)
      throw new SkepError('server_not_found', `server '${name}' is not in the registry`);
    return entry;
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

  #deriveName(source: string): string {
    const base = baseNameFor(source);
    if (this.rows.get(base) === undefined) return base;
    for (let i = 2; ; i++) {
      const candidate = `${base}-${i}`;
      if (this.rows.get(candidate) === undefined) return candidate;
    }
  }

  /** Applies the fields present in `request` over `base` (merge semantics). */
  #applyRequest(base: RunConfig, request: UpdateWorkloadRequest): RunConfig {
    const c: RunConfig = structuredClone(base);
    const r = request;
    if (r.image !== undefined) {
      c.image = r.image;
      if (r.image !== '') delete c.remote_url;
    }
    if (r.url !== undefined) {
      if (r.url === '') delete c.remote_url;
      else {
        c.remote_url = r.url;
        c.image = '';
      }
    }
    if (r.host !== undefined) c.host = r.host === '' ? '127.0.0.1' : r.host;
    if (r.allowed_origins !== undefined) {
      if (r.allowed_origins.length === 0) delete c.allowed_origins;
      else c.allowed_origins = [...r.allowed_origins];
    }
    if (r.cmd_arguments !== undefined) c.cmd_args = [...r.cmd_arguments];
    if (r.target_port !== undefined) c.target_port = r.target_port;
    if (r.env_vars !== undefined) c.env_vars = { ...r.env_vars };
    if (r.secrets !== undefined) {
      for (const ref of r.secrets) validateSecretRef(ref);
      c.secrets = r.secrets.map(formatSecretRef);
    }
    if (r.volumes !== undefined) c.volumes = [...r.volumes];
    if (r.transport !== undefined) c.transport = r.transport;
    if (r.authz_config !== undefined) {
      if (r.authz_config === '') delete c.authz_config_path;
      else c.authz_config_path = r.authz_config;
    }
    if (r.oidc !== undefined) {
      // The client secret is never stored in plain text (the reference ignores it too).
      const o = r.oidc;
      c.oidc_config = {
        ...(o.issuer === undefined ? {} : { issuer: o.issuer }),
        ...(o.audience === undefined ? {} : { audience: o.audience }),
        ...(o.jwks_url === undefined ? {} : { jwksurl: o.jwks_url }),
        ...(o.introspection_url === undefined ? {} : { introspectionURL: o.introspection_url }),
        ...(o.client_id === undefined ? {} : { clientID: o.client_id }),
        ...(o.scopes === undefined ? {} : { scopes: o.scopes }),
      };
    }
    if (r.permission_profile !== undefined) c.permission_profile = structuredClone(r.permission_profile);
    if (r.proxy_mode !== undefined) c.proxy_mode = r.proxy_mode;
    if (r.network_isolation !== undefined) c.isolate_network = r.network_isolation ?? true;
    if (r.trust_proxy_headers !== undefined) c.trust_proxy_headers = r.trust_proxy_headers;
    if (r.allow_docker_gateway !== undefined) c.allow_docker_gateway = r.allow_docker_gateway;
    if (r.tools !== undefined) {
      if (r.tools.length === 0) delete c.tools_filter;
      else c.tools_filter = [...r.tools];
    }
    if (r.tools_override !== undefined) {
      for (const [tool, o] of Object.entries(r.tools_override)) {
        if ((o.name ?? '') === '' && (o.description ?? '') === '') {
          throw new SkepError('bad_request', `tools_override.${tool}: set a name or a description`);
        }
      }
      c.tools_override = structuredClone(r.tools_override);
    }
    if (r.group !== undefined) c.group = r.group === '' ? DEFAULT_GROUP : r.group;
    if (r.oauth_config !== undefined) {
      const o = r.oauth_config;
      if (o.client_secret !== undefined) validateSecretRef(o.client_secret);
      if (o.bearer_token !== undefined) validateSecretRef(o.bearer_token);
      c.remote_auth_config = {
        ...(c.remote_auth_config?.headers === undefined ? {} : { headers: c.remote_auth_config.headers }),
        ...(o.issuer === undefined ? {} : { issuer: o.issuer }),
        ...(o.authorize_url === undefined ? {} : { authorize_url: o.authorize_url }),
        ...(o.token_url === undefined ? {} : { token_url: o.token_url }),
        ...(o.client_id === undefined ? {} : { client_id: o.client_id }),
        ...(o.client_secret === undefined ? {} : { client_secret: formatSecretRef(o.client_secret) }),
        ...(o.bearer_token === undefined ? {} : { bearer_token: formatSecretRef(o.bearer_token) }),
        ...(o.scopes === undefined ? {} : { scopes: o.scopes }),
        ...(o.use_pkce === undefined ? {} : { use_pkce: o.use_pkce }),
        ...(o.oauth_params === undefined ? {} : { oauth_params: o.oauth_params }),
        ...(o.callback_port === undefined ? {} : { callback_port: o.callback_port }),
        ...(o.skip_browser === undefined ? {} : { skip_browser: o.skip_browser }),
        ...(o.resource === undefined ? {} : { resource: o.resource }),
      };
    }
    if (r.headers !== undefined)
      c.remote_auth_config = { ...(c.remote_auth_config ?? {}), headers: structuredClone(r.headers) };
    if (r.header_forward !== undefined) c.header_forward = structuredClone(r.header_forward);
    if (r.runtime_config !== undefined) c.runtime_config = structuredClone(r.runtime_config);
    if (r.sandbox !== undefined) c.sandbox = r.sandbox;
    return c;
  }

  /** Everything about a config that can be checked without side effects. */
  async #validateConfig(config: RunConfig): Promise<void> {
    checkExposure(config);
    if (config.remote_url !== undefined) {
      let url: URL;
      try {
        url = new URL(config.remote_url);
      } catch {
        throw new SkepError('bad_request', `url '${config.remote_url}' is not a valid URL`);
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:')
        throw new SkepError('bad_request', 'url must be http:// or https://');
      if (config.transport === 'stdio')
        throw new SkepError(
          'bad_request',
          "a remote server (url) needs transport 'sse' or 'streamable-http'",
        );
    }
    validateGroupName(config.group);
    this.#groups.require(config.group);
    const refs: SecretRef[] = config.secrets.map(parseSecretRef);
    for (const extra of [config.remote_auth_config?.client_secret, config.remote_auth_config?.bearer_token]) {
      if (extra !== undefined) refs.push(parseSecretRef(extra));
    }
    await requireSecrets(refs, this.secretLookup);
    await this.#checkRunnable(config);
    for (const key of Object.keys(config.env_vars)) {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key))
        throw new SkepError('bad_request', `env_vars: '${key}' is not a valid variable name`);
    }
  }

  async #checkRunnable(config: RunConfig): Promise<void> {
    if (config.remote_url !== undefined) return;
    if (config.image === '') throw new SkepError('bad_request', "'image' is empty");
    if (config.permission_profile.privileged === true && !this.#config.runtime.allow_privileged) {
      throw new SkepError(
        'privileged_not_allowed',
        'the permission profile asks for a privileged container; set runtime.allow_privileged: true in the config to allow it',
      );
    }
    if (IMAGE_SCHEMES.test(config.image)) {
      // The runner starts the server with this environment (and the workload's PATH, if set).
      checkLocalExecutable(config.image, { ...process.env, ...config.env_vars });
      // A profile that asks for isolation never runs unisolated without an explicit opt-out (issue 19).
      checkWorkloadSandbox(this.#config, config);
    } else if (this.#containers !== undefined) {
      await this.#containers.check(config.image);
    } else {
      throw new SkepError(
        'bad_request',
        `'${config.image}' is a container image; this build runs servers as local processes only (npx://, uvx://, cmd://)`,
      );
    }
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
    return this.rows
      .list(options.group)
      .map((row) => this.#observed(row))
      .filter((row) => options.all === true || row.status === 'running')
      .map((row) => {
        const { sandboxed, sandbox } = workloadSandbox(this.#config, row.config);
        return { ...summaryOf(row), sandboxed, sandbox };
      });
  }

  /** Throws `invalid_name` / `workload_not_found`. */
  #require(name: string): WorkloadRow {
    validateWorkloadName(name);
    const row = this.rows.get(name);
    if (row === undefined) throw new SkepError('workload_not_found', `workload '${name}' not found`);
    return row;
  }

  get(name: string): WorkloadDetail {
    const row = this.#observed(this.#require(name));
    const { sandboxed, sandbox, reason } = workloadSandbox(this.#config, row.config);
    return { ...detailOf(row), sandboxed, sandbox, sandbox_reason: reason };
  }

  status(name: string): { status: WorkloadStatus; status_context: string } {
    const row = this.#observed(this.#require(name));
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

  /**
   * The stored status, corrected by what can be observed: a workload recorded as running or
   * starting whose runner process is gone is reported `unhealthy` (it should run) or `stopped`.
   */
  #observed(row: WorkloadRow): WorkloadRow {
    const active = row.status === 'running' || row.status === 'starting' || row.status === 'stopping';
    if (!active || runnerAlive(row.runnerPid, row.name)) return row;
    if (row.desired === 'running') {
      return {
        ...row,
        status: 'unhealthy',
        statusContext: `runner process ${row.runnerPid ?? '(none)'} is not running`,
      };
    }
    return { ...row, status: 'stopped', statusContext: '' };
  }

  // ---------------------------------------------------------------- update

  /** Merge update; restarts the workload when it was meant to be running. */
  async update(name: string, request: UpdateWorkloadRequest): Promise<{ name: string; port: number }> {
    const row = this.#require(name);
    const next = this.#applyRequest(row.config, request);
    next.name = name;
    await this.#validateConfig(next);
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

  async deleteNow(name: string): Promise<void> {
    await this.#serial(name, async () => {
      const row = this.rows.get(name);
      if (row === undefined) return;
      this.rows.setStatus(name, { status: 'removing', context: '', desired: 'stopped' });
      await stopRunner(row.runnerPid, name, this.#stopGraceMs);
      // A runner that had to be killed could not remove its containers; do it here.
      await this.#containers?.remove(name).catch((err: unknown) => {
        this.#logger.warn({ workload: name, err: describeError(err) }, 'cannot remove the containers');
      });
      this.rows.delete(name);
      removeLogs(this.#config.paths.logsDir, name, this.#config.workloads.log_files);
      // A later workload of the same name must not inherit this one's files.
      removeSandboxHome(this.#config.paths, name);
      this.#emit(name, 'removed', row);
    });
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
    if (names.length === 0) throw new SkepError('bad_request', 'names is empty; list at least one workload');
    for (const name of names) {
      const problem = workloadNameProblem(name);
      if (problem !== undefined)
        throw new SkepError('invalid_name', `invalid workload name '${name}': ${problem}`);
    }
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

  async moveWorkloads(from: string, to: string): Promise<void> {
    for (const name of this.rows.names(from)) {
      await this.#serial(name, async () => {
        const row = this.rows.get(name);
        if (row === undefined) return;
        this.rows.saveConfig({ ...row.config, group: to });
        this.#emit(name, 'updated');
      });
    }
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
      } else if (row.desired === 'running') {
        if (row.status === 'error') continue; // gave up on purpose; a restart is the user's call
        if (row.runnerPid !== undefined) killGroup(row.runnerPid);
        this.#logger.info({ workload: row.name }, 'resuming workload whose runner is gone');
        await this.#serial(row.name, () => this.#launch(row.name));
        resumed.push(row.name);
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
    this.rows.setStatus(name, { status: 'starting', context: '', runnerPid: null, desired: 'running' });
    try {
      const pid = this.#spawn(name, this.#config);
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
      this.#logger.error({ workload: name, err: describeError(err) }, `background ${what} failed`);
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
      url: workloadUrl(row.config),
    };
    for (const listener of this.#listeners) {
      try {
        void Promise.resolve(listener(change)).catch((err: unknown) =>
          this.#logger.warn({ workload: name, err: describeError(err) }, 'workload change listener failed'),
        );
      } catch (err) {
        this.#logger.warn({ workload: name, err: describeError(err) }, 'workload change listener failed');
      }
    }
  }
}

/** The proxy's reach (`exposure.ts`): a 400 naming the field before anything is written. */
function checkExposure(config: RunConfig): void {
  const problem = allowedOriginsProblem(config.allowed_origins ?? []) ?? hostExposureProblem(config);
  if (problem !== undefined) throw new SkepError('bad_request', problem);
}

function bindHostFor(host: string): string {
  return host === '' ? '127.0.0.1' : host;
}

function summaryOf(row: WorkloadRow): Omit<WorkloadSummary, 'sandboxed' | 'sandbox'> {
  const c = row.config;
  return {
    name: row.name,
    package: c.remote_url ?? c.image,
    group: c.group,
    labels: c.container_labels,
    port: c.port,
    proxy_mode: c.proxy_mode ?? 'streamable-http',
    remote: c.remote_url !== undefined,
    url: workloadUrl(c),
    tools: c.tools_filter ?? [],
    transport_type: c.transport,
    status: row.status,
    status_context: row.statusContext,
    created_at: row.createdAt,
    started_at: row.startedAt ?? '',
  };
}

function detailOf(row: WorkloadRow): Omit<WorkloadDetail, 'sandboxed' | 'sandbox' | 'sandbox_reason'> {
  const c = row.config;
  const auth = c.remote_auth_config;
  const refOf = (text: string | undefined) => (text === undefined ? undefined : parseSecretRef(text));
  const clientSecret = refOf(auth?.client_secret);
  const bearer = refOf(auth?.bearer_token);
  return {
    name: row.name,
    image: c.image,
    host: c.host,
    group: c.group,
    url: c.remote_url ?? '',
    transport: c.transport,
    proxy_mode: c.proxy_mode ?? 'streamable-http',
    authz_config: c.authz_config_path ?? '',
    cmd_arguments: c.cmd_args,
    tools: c.tools_filter ?? [],
    volumes: c.volumes,
    env_vars: c.env_vars,
    headers: (auth?.headers as WorkloadDetail['headers'] | undefined) ?? [],
    header_forward: c.header_forward ?? {},
    network_isolation: c.isolate_network ?? false,
    trust_proxy_headers: c.trust_proxy_headers ?? false,
    proxy_port: c.port,
    target_port: c.target_port ?? 0,
    oauth_config: {
      ...(auth?.issuer === undefined ? {} : { issuer: auth.issuer }),
      ...(auth?.authorize_url === undefined ? {} : { authorize_url: auth.authorize_url }),
      ...(auth?.token_url === undefined ? {} : { token_url: auth.token_url }),
      ...(auth?.client_id === undefined ? {} : { client_id: auth.client_id }),
      ...(clientSecret === undefined ? {} : { client_secret: clientSecret }),
      ...(bearer === undefined ? {} : { bearer_token: bearer }),
      ...(auth?.scopes === undefined ? {} : { scopes: auth.scopes }),
      ...(auth?.use_pkce === undefined ? {} : { use_pkce: auth.use_pkce }),
      ...(auth?.oauth_params === undefined ? {} : { oauth_params: auth.oauth_params }),
      ...(auth?.callback_port === undefined ? {} : { callback_port: auth.callback_port }),
      ...(auth?.skip_browser === undefined ? {} : { skip_browser: auth.skip_browser }),
      ...(auth?.resource === undefined ? {} : { resource: auth.resource }),
    },
    oidc: {
      ...(c.oidc_config?.issuer === undefined ? {} : { issuer: c.oidc_config.issuer }),
      ...(c.oidc_config?.audience === undefined ? {} : { audience: c.oidc_config.audience }),
      ...(c.oidc_config?.jwksurl === undefined ? {} : { jwks_url: c.oidc_config.jwksurl }),
      ...(c.oidc_config?.introspectionURL === undefined
        ? {}
        : { introspection_url: c.oidc_config.introspectionURL }),
      ...(c.oidc_config?.clientID === undefined ? {} : { client_id: c.oidc_config.clientID }),
      ...(c.oidc_config?.scopes === undefined ? {} : { scopes: c.oidc_config.scopes }),
    },
    permission_profile: c.permission_profile,
    runtime_config: c.runtime_config ?? {},
    secrets: c.secrets.map(parseSecretRef),
    tools_override: c.tools_override ?? {},
    status: row.status,
    status_context: row.statusContext,
  };
}
