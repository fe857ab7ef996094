/**
 * The contract of a pipeline stage: one middleware of a workload's proxy, built from the run
 * configuration. The runner builds the ordered list (`build.ts`); the proxy runs it for every
 * client request (`ProxyMiddleware.handle`), and a stage that looks at answers registers
 * `ctx.onReply` / `ctx.onEnd` hooks from its `handle`.
 */
import type { AuditEvent } from '../middleware/audit/index.js';
import type { AssumeRole, FetchLike, SecretStore, UpstreamTokenSource } from '../middleware/auth/index.js';
import type { ProxyHttpHandler, ProxyMiddleware } from '../proxy/index.js';
import type { SecretLookup } from '../../secrets/index.js';
import type { RateLimitSource } from '../middleware/telemetry/index.js';
import type { Logger } from '../../shared/index.js';
import type { RunConfig } from '../../workloads/index.js';

/** The embedded authorization server as the pipeline sees it (the runner creates it). */
export interface EmbeddedAuthServerHandle extends UpstreamTokenSource {
  readonly issuer: string;
  verifyAccessToken(token: string, expectedAudience: string): Promise<Record<string, unknown>>;
}

/** One entry of `middleware_configs`: `{ type, parameters }`, as in ToolHive's run configuration. */
export interface MiddlewareConfig {
  type: string;
  parameters?: unknown;
}

/** A built middleware. `close` (from `ProxyMiddleware`) is awaited when the workload stops. */
export interface Stage extends ProxyMiddleware {
  /** Interactive parts (the remote OAuth login), called once the server is reachable. Idempotent. */
  start?(): Promise<void>;
  /**
   * Headers this stage sets on every request for the server, the same each time (header
   * forward/injection, a fixed bearer token): the runner's reachability probe of a remote
   * server sends them too. Per-request credentials (token exchange, SigV4, OAuth) are not here.
   */
  readonly staticHeaders?: Readonly<Record<string, string>>;
  /**
   * An endpoint of its own on the proxy's port, outside the pipeline (telemetry's `/metrics`):
   * mounted with `ProxyOptions.handlers`, behind the Host/Origin guard, tried for paths that
   * are not MCP endpoints.
   */
  handler?: ProxyHttpHandler;
}

/**
 * What stages of one pipeline publish for each other while it is built, read at run time (not
 * in `create`: a stage cannot count on being built after another).
 */
export interface PipelinePeers {
  /** The rate limiters' counters (the `ratelimit` stage adds its own), exported by telemetry. */
  readonly rateLimits: RateLimitSource[];
  /** The audit stage's log, when the workload has audit: other stages' events (guardrails) go there too. */
  audit?: AuditPeer;
}

/** Where a stage writes an audit event of its own (the audit stage publishes it). */
export interface AuditPeer {
  /** `component` of the audit stage's events. */
  readonly component: string;
  /** Whether the audit configuration's event filters let events of `type` through. */
  accepts(type: string): boolean;
  write(event: AuditEvent): void;
}

/** What a stage factory may use besides its parameters. */
export interface StageDeps {
  /** The whole run configuration (server name, transport, remote URL, `trust_proxy_headers`). */
  config: RunConfig;
  /** Shared by the stages of this pipeline (`buildPipeline` creates it). */
  peers?: PipelinePeers;
  logger: Logger;
  secretLookup: SecretLookup;
  /** Persists the remote OAuth client's registration and refresh token (SecretsService fits). */
  secrets?: SecretStore;
  /** The embedded authorization server, when the workload runs one. */
  authServer?: EmbeddedAuthServerHandle;
  /** The workload's public MCP URL: the RFC 9728 resource unless `oidc_config.resourceURL` says otherwise. */
  resourceUrl?: string;
  fetch?: FetchLike;
  now?: () => number;
  /** STS endpoint override (a local stand-in in tests); default the regional AWS endpoint. */
  stsEndpoint?: string;
  /** Replaces the SDK STS call entirely (benchmarks). */
  assumeRole?: AssumeRole;
  /** Shows the remote login URL (tests drive the login over HTTP with it). */
  openUrl?: (url: string) => Promise<void> | void;
  /** Told the remote login URL whenever a login starts (the runner publishes it in the status). */
  onLoginUrl?: (url: string) => void;
}

/**
 * Builds one stage type. `fromRunConfig` reads the typed run-configuration fields and returns
 * the stage's `middleware_configs` parameters (undefined: the stage is absent); `create`
 * builds the stage from parameters, whichever way they came. Configuration mistakes throw
 * `invalid_config` naming the field, before anything is served.
 */
export interface StageFactory {
  readonly type: string;
  fromRunConfig?(config: RunConfig): unknown;
  /**
   * Validates the parameters without side effects (no secrets resolved, no connections):
   * create, update and import call it, so a bad configuration is a 400 before anything is
   * written rather than a start error. `create` validates again at start.
   */
  check?(parameters: unknown, config: RunConfig): void | Promise<void>;
  create(parameters: unknown, deps: StageDeps): Promise<Stage | undefined>;
}
