/**
 * The runtime interface: how a workload's MCP server process comes to life. The runner
 * supervises whatever a runtime starts; the proxy talks to it over stdio or HTTP.
 * Implementations: `process` (local child processes, the embedded default) and `docker`
 * (Docker Engine API; Docker or Podman).
 */
import type { Readable, Writable } from 'node:stream';
import type { PermissionProfile } from '../../schemas/index.js';

export type { PermissionProfile };

export type RuntimeName = 'process' | 'docker';
export type ServerTransport = 'stdio' | 'sse' | 'streamable-http';

export type RuntimeHealth = { ok: true; detail?: string } | { ok: false; reason: string };

/** Everything a runtime needs to start one server. Secrets are already resolved into `env`. */
export interface ServerSpec {
  /** Workload name (used for labels, container names and log files). */
  name: string;
  /** `npx://pkg`, `uvx://pkg`, `cmd://executable`, or a container image. */
  image: string;
  args: string[];
  env: Record<string, string>;
  transport: ServerTransport;
  /** Port the server listens on inside its sandbox, for HTTP transports. */
  targetPort?: number;
  /** Working directory for process servers. */
  cwd?: string;
  /** Where the server's stderr (and stdout for HTTP servers) is appended. */
  logFile: string;
  /** The permission profile (`undefined`: the built-in `network`); containers and the process sandbox. */
  permissionProfile?: PermissionProfile;
  /** A built-in profile name (`none`, `network`) or a JSON file path. */
  permissionProfileName?: string;
  /** Enforce the profile's network rules (default true): containers and the process sandbox. */
  isolateNetwork?: boolean;
  /** Process runtime: the workload's override of `runtime.sandbox` (run-config `sandbox`). */
  sandbox?: 'auto' | 'bwrap' | 'off';
  /** Container runtime: extra `host:container[:ro]` binds (run-config `volumes`). */
  volumes?: string[];
  /** Container runtime: extra labels (run-config `container_labels`). */
  labels?: Record<string, string>;
  /** Progress of slow start steps (image pulls), e.g. `pulling image x: 40%`. */
  onProgress?: (message: string) => void;
  /** Container runtime: check the image's cosign signature before it starts (run-config `image_verification`). */
  imageVerification?: ImageVerificationPolicy;
}

/** The run config's `image_verification` (a Skep extension; schema in `schemas/image-verification.ts`). */
export interface ImageVerificationPolicy {
  /** `warn`: run and report what the check found; `enforce`: refuse to start unless verified. */
  policy: 'warn' | 'enforce';
  /** Trusted ECDSA P-256 public keys (SPKI PEM), from the workload config or its registry entry. */
  public_keys?: string[];
  /** Path of the Sigstore `trusted_root.json` that keyless signatures are verified against. */
  trusted_root?: string;
  /** The keyless identity policy (Fulcio certificate): identity (exact or regexp), OIDC issuer, source repository. */
  signer_identity?: string;
  signer_identity_regexp?: string;
  cert_issuer?: string;
  repository_uri?: string;
}

/** What the image check found; its `message` is shown in the workload status. */
export interface ImageVerificationResult {
  status: 'verified' | 'unsigned' | 'invalid' | 'unverifiable';
  policy: 'warn' | 'enforce';
  image: string;
  /** The digest the registry serves for the image (what was checked, and what runs when verified). */
  digest?: string;
  /** The verifying key's fingerprint (`sha256:` + hex of its SPKI DER), or the keyless certificate's identity. */
  signer?: string;
  /** Keyless: the OIDC issuer of the signing certificate. */
  issuer?: string;
  message: string;
}

export interface ServerExit {
  code: number | null;
  signal: string | null;
}

/** A started server. `stdio` is set for stdio servers, `url` for HTTP servers. */
export interface ServerHandle {
  readonly id: string;
  readonly stdio?: { stdin: Writable; stdout: Readable };
  readonly url?: string;
  readonly exited: Promise<ServerExit>;
  /** Set when the image was checked (`ServerSpec.imageVerification`). */
  readonly imageVerification?: ImageVerificationResult;
  /** Stops the server (graceful, then forceful); idempotent. */
  stop(): Promise<void>;
}

export interface Runtime {
  readonly name: RuntimeName;
  health(): Promise<RuntimeHealth>;
  start(spec: ServerSpec): Promise<ServerHandle>;
}
