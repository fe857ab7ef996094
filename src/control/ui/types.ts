/**
 * The wire objects the UI reads and writes. The registry's are the API's own TypeBox static
 * types, the clients' the clients domain's (`src/clients/wire.ts`; both imported as types only:
 * nothing of the server lands in the bundle). The workload
 * objects mirror `src/schemas/api/workloads.ts` — whose module graph reaches Node-only code the
 * browser's type environment cannot hold — and test/unit/ui/wire-types.test.ts makes the
 * type checker prove that every server object fits what the UI reads and every UI request
 * fits what the API accepts. The others mirror the route schemas in src/control/api/routes/.
 */

/** `WorkloadSummary` (GET /api/v1beta/workloads). */
export interface WorkloadSummary {
  name: string;
  package: string;
  group: string;
  port: number;
  proxy_mode: string;
  remote: boolean;
  url: string;
  tools: string[];
  transport_type: string;
  status: string;
  status_context: string;
  created_at: string;
  started_at: string;
  sandboxed: boolean;
  /** `bwrap`, `container`, `none` or `n/a` (a remote or virtual server). */
  sandbox: string;
  network: string;
  /** `owner`, `inbound-auth` or `anyone-on-this-machine`. */
  endpoint_access: string;
  /** What the guardrails stage does: `off`, or e.g. `ownSecrets:redact credentials:redact`. */
  guardrails: string;
}

/** `WorkloadDetail` (GET /api/v1beta/workloads/:name): the fields the UI shows. */
export interface WorkloadDetail {
  name: string;
  image: string;
  host: string;
  group: string;
  url: string;
  transport: string;
  proxy_mode: string;
  authz_config: string;
  cmd_arguments: string[];
  tools: string[];
  env_vars: Record<string, string>;
  proxy_port: number;
  secrets: Array<{ name: string; target: string }>;
  status: string;
  status_context: string;
  sandboxed: boolean;
  sandbox: string;
  sandbox_reason: string;
  /** `none`, `filtered`, `host`, `open` or `n/a`, as enforced; `network_detail` in words. */
  network: string;
  network_detail: string;
  endpoint_access: string;
  /** What the guardrails stage does: `off`, or e.g. `ownSecrets:redact credentials:redact`. */
  guardrails: string;
  /** Resumed when `skep serve` starts (after a reboot); false: stays stopped until started. */
  autostart: boolean;
}

/** The fields of `UpdateWorkloadRequest` the edit form sends. */
export interface UpdateWorkloadRequest {
  env_vars?: Record<string, string>;
  cmd_arguments?: string[];
  tools?: string[];
  group?: string;
  autostart?: boolean;
}

/** The fields of `CreateWorkloadRequest` the catalog's run form sends. */
export interface CreateWorkloadRequest {
  name?: string;
  registry?: string;
  server?: string;
  group?: string;
  env_vars?: Record<string, string>;
  secrets?: Array<{ name: string; target: string }>;
  header_forward?: {
    add_plaintext_headers?: Record<string, string>;
    add_headers_from_secret?: Record<string, string>;
  };
  cmd_arguments?: string[];
  /** A container's mounts, `HOST:IN_CONTAINER[:ro]`. */
  volumes?: string[];
  /** A local process's sandbox: what it may read and write, its network. */
  permission_profile?: NonNullable<import('../../schemas/registry/index.js').ImageServer['permissions']>;
  autostart?: boolean;
}

// RegistryInfo: `GET /api/v1beta/registry` answers `{ registries: RegistryInfo[] }`.
export type {
  CatalogSkill,
  EnvVar,
  Header,
  ImageServer,
  RegistryInfo,
  RemoteServer,
} from '../../schemas/registry/index.js';

/** `GET /api/v1beta/registry/default/servers/:name`. */
export type FoundServer =
  | { is_remote: false; server: import('../../schemas/registry/index.js').ImageServer }
  | { is_remote: true; remote_server: import('../../schemas/registry/index.js').RemoteServer };

/** `GET /api/v1beta/secrets/default`. */
export interface SecretsProvider {
  name: string;
  provider_type: string;
  capabilities: {
    can_read: boolean;
    can_write: boolean;
    can_delete: boolean;
    can_list: boolean;
    can_cleanup: boolean;
  };
}

// `GET /api/v1beta/discovery/clients` and `GET /api/v1beta/clients`: the clients domain's own types.
export type { ClientRegistration, ClientStatus } from '../../schemas/clients/index.js';

/** routes/groups.ts `Group`. */
export interface Group {
  name: string;
  registered_clients: string[];
}

/** routes/skills.ts `InstalledSkill`. */
export interface InstalledSkill {
  metadata: { name: string; version: string; description: string; author: string; tags: string[] };
  scope: 'user' | 'project';
  project_root?: string;
  reference: string;
  tag?: string;
  digest: string;
  status: string;
  installed_at: string;
  clients: string[];
  managed: boolean;
}

/** `POST /api/v1beta/skills/validate`. */
export interface SkillValidation {
  valid: boolean;
  errors?: string[];
  warnings?: string[];
}
