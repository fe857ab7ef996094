/**
 * The runtime interface: how a workload's MCP server process comes to life. The runner
 * supervises whatever a runtime starts; the proxy talks to it over stdio or HTTP.
 * Implementations: `process` (local child processes, the embedded default) and `docker`
 * (Docker Engine API; Docker or Podman).
 */
import type { Readable, Writable } from 'node:stream';

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
  /** Stops the server (graceful, then forceful); idempotent. */
  stop(): Promise<void>;
}

export interface Runtime {
  readonly name: RuntimeName;
  health(): Promise<RuntimeHealth>;
  start(spec: ServerSpec): Promise<ServerHandle>;
}
