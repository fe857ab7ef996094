/**
 * What the Docker runtime decides about a server container before it talks to the engine:
 * the image and command (`npx://`/`uvx://` run in the configured base images), the
 * permission profile's binds and outbound policy, how the container reaches the network, and
 * the engine's create options. Pure functions; `DockerRuntime.start` runs them.
 */
import type Docker from 'dockerode';
import { definedOnly, SkepError } from '../../../shared/index.js';
import { EGRESS_PROXY_PORT, type EgressConfig } from '../egress/egress-script.js';
import { checkPackageSpec } from '../package-spec.js';
import type { PermissionProfile, ServerSpec } from '../types.js';
import { LABEL_INSTANCE, LABEL_MANAGED, LABEL_ROLE, LABEL_WORKLOAD } from './labels.js';
import {
  bindsFor,
  deniesEverything,
  type OutboundPolicy,
  outboundPolicy,
  resolvePermissionProfile,
} from './profile.js';

/** The image and command of a server container. */
export interface ContainerPlan {
  image: string;
  /** Set for `npx://`/`uvx://`: the base image's own entrypoint (often `node`) must not wrap the launcher. */
  entrypoint?: string[];
  cmd: string[] | undefined;
}

/**
 * How the server reaches the network: `none` (a stdio server whose profile allows nothing, or
 * network mode `none`), `egress` (alone on an internal network behind the egress proxy), or
 * `default` (the engine's default network: all outbound allowed, or isolation off).
 */
export type ServerNetwork = 'none' | 'egress' | 'default';

/** Everything `start` decided before pulling, creating or starting anything. */
export interface ServerPlan {
  /** An SSE or streamable-HTTP server (published port) rather than a stdio one (attached). */
  http: boolean;
  container: ContainerPlan;
  profile: PermissionProfile;
  binds: string[];
  policy: OutboundPolicy;
  network: ServerNetwork;
  /** The egress proxy's image, when `network` is `egress`. */
  egressImage: string | undefined;
}

/** What the runtime's options say about images and privileges. */
export interface PlanOptions {
  allowPrivileged: boolean;
  nodeImage?: string;
  uvxImage?: string;
  egressImage?: string;
}

/** Checks `spec` against the options and decides the container; throws before anything starts. */
export function planServer(spec: ServerSpec, options: PlanOptions): ServerPlan {
  const http = spec.transport !== 'stdio';
  if (http && (spec.targetPort === undefined || spec.targetPort === 0)) {
    throw new SkepError('invalid_config', `an ${spec.transport} server needs a target port`);
  }
  const container = planContainer(spec, options);
  const profile = resolvePermissionProfile(spec.permissionProfile, spec.permissionProfileName);
  if (profile.privileged === true && !options.allowPrivileged) {
    throw new SkepError(
      'privileged_not_allowed',
      'the permission profile asks for a privileged container; set runtime.allow_privileged: true in the config to allow it',
    );
  }
  const binds = bindsFor(profile, spec.volumes);
  const policy = outboundPolicy(profile);
  const network = serverNetwork(profile, spec.isolateNetwork !== false, http);
  const egressImage = options.egressImage ?? options.nodeImage;
  if (network === 'egress' && egressImage === undefined) {
    throw new SkepError(
      'invalid_config',
      'the permission profile restricts outbound network access, which needs the egress proxy image: set runtime.node_image (or runtime.egress_image) to a local image with node, or allow all outbound traffic',
    );
  }
  return {
    http,
    container,
    profile,
    binds,
    policy,
    network,
    egressImage: network === 'egress' ? egressImage : undefined,
  };
}

/**
 * The network a server container gets from its resolved permission profile: `isolateNetwork`
 * is the run configuration's `isolate_network` (on unless false); `http` is a server with a
 * published port (it keeps a network even when its profile allows no outbound traffic).
 */
export function serverNetwork(
  profile: PermissionProfile,
  isolateNetwork: boolean,
  http: boolean,
): ServerNetwork {
  const policy = outboundPolicy(profile);
  const isolate = isolateNetwork && !policy.allowAll;
  const noNetwork = (isolate && !http && deniesEverything(policy)) || profile.network?.mode === 'none';
  return noNetwork ? 'none' : isolate ? 'egress' : 'default';
}

/** A container image as is; `npx://`/`uvx://` packages in the configured base images. */
function planContainer(spec: ServerSpec, options: PlanOptions): ContainerPlan {
  const scheme = /^([a-z]+):\/\/(.*)$/.exec(spec.image);
  if (scheme === null) return { image: spec.image, cmd: spec.args.length > 0 ? [...spec.args] : undefined };
  const target = scheme[2] ?? '';
  if (target === '') throw new SkepError('invalid_reference', `'${spec.image}' names no package`);
  if (scheme[1] === 'npx' && options.nodeImage !== undefined) {
    checkPackageSpec(spec.image, 'npx', target);
    return { image: options.nodeImage, entrypoint: ['npx'], cmd: ['-y', '--', target, ...spec.args] };
  }
  if (scheme[1] === 'uvx' && options.uvxImage !== undefined) {
    checkPackageSpec(spec.image, 'uvx', target);
    return { image: options.uvxImage, entrypoint: ['uvx'], cmd: [target, ...spec.args] };
  }
  throw new SkepError(
    'invalid_config',
    `'${spec.image}' cannot run in a container: set runtime.node_image (npx://) or runtime.uvx_image (uvx://), or use the process runtime`,
  );
}

/** Skep's labels on a container or network of `spec`'s workload, with the workload's own. */
export function labelsFor(spec: ServerSpec, instance: string, role: string): Record<string, string> {
  return {
    ...spec.labels,
    [LABEL_MANAGED]: 'true',
    [LABEL_INSTANCE]: instance,
    [LABEL_WORKLOAD]: spec.name,
    [LABEL_ROLE]: role,
  };
}

/** The server's environment: the spec's, and for an HTTP server the port it must listen on. */
export function serverEnv(spec: ServerSpec, http: boolean): Record<string, string> {
  const env: Record<string, string> = { ...spec.env };
  if (http) {
    env['PORT'] = String(spec.targetPort);
    env['MCP_PORT'] = String(spec.targetPort);
  }
  return env;
}

/** Points the server's HTTP clients at the egress proxy (loopback stays direct). */
export function useEgressProxy(env: Record<string, string>, egressIp: string): void {
  const proxyUrl = `http://${egressIp}:${EGRESS_PROXY_PORT}`;
  for (const key of ['HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy']) env[key] = proxyUrl;
  env['NO_PROXY'] = env['no_proxy'] = 'localhost,127.0.0.1,::1';
}

/** The egress proxy's rules: the profile's outbound policy and, for an HTTP server, its inbound forward. */
export function egressConfigFor(
  spec: ServerSpec,
  plan: ServerPlan,
  serverIp: string,
  gateways: string[],
): EgressConfig {
  return {
    proxyPort: EGRESS_PROXY_PORT,
    allowHosts: plan.policy.hosts,
    allowPorts: plan.policy.ports,
    // The internal network's gateway is the host's side of its bridge; the egress proxy
    // finds the default network's gateway in its own routes.
    hostAddresses: gateways,
    ...(plan.http
      ? {
          inbound: {
            listenPort: spec.targetPort as number,
            targetHost: serverIp,
            targetPort: spec.targetPort as number,
            allowHosts: plan.profile.network?.inbound?.allow_host ?? [],
          },
        }
      : {}),
  };
}

/** How the server container is attached to the network, decided by `DockerRuntime`. */
export interface ServerNetworking {
  hostConfig: Docker.HostConfig;
  networking: Docker.ContainerCreateOptions['NetworkingConfig'];
  exposed: Record<string, object>;
}

/** The engine's create options for the server container. */
export function serverCreateOptions(
  name: string,
  plan: ServerPlan,
  env: Record<string, string>,
  labels: Record<string, string>,
  net: ServerNetworking,
): Docker.ContainerCreateOptions {
  const { http, container } = plan;
  return {
    name,
    Image: container.image,
    ...definedOnly({ Entrypoint: container.entrypoint, Cmd: container.cmd }),
    Env: Object.entries(env).map(([k, v]) => `${k}=${v}`),
    Labels: labels,
    Tty: false,
    OpenStdin: !http,
    // The container's stdin closes when the runner's attach ends: a stop or a runner that
    // died, after which a stdio server has nobody to talk to anyway.
    StdinOnce: !http,
    AttachStdin: !http,
    AttachStdout: true,
    AttachStderr: true,
    ExposedPorts: net.exposed,
    HostConfig: net.hostConfig,
    ...definedOnly({ NetworkingConfig: net.networking }),
  };
}
