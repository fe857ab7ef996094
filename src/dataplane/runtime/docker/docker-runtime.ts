/**
 * The container runtime over the Docker Engine API (dockerode); the same calls work against
 * Docker and Podman's compatible service. One server = one container labelled as Skep's
 * (`dev.skep.managed`, `dev.skep.instance` = this Skep home, `dev.skep.workload`,
 * `dev.skep.role`). Stdio servers are attached (`Tty: false`, frames demultiplexed: stdout
 * is the raw MCP stream, stderr goes to the log); HTTP servers publish their port on
 * 127.0.0.1 and their output is followed into the log.
 *
 * Network (permission profile, `network.outbound`): `insecure_allow_all` (or isolation off)
 * → the engine's default network. Otherwise the server sits alone on a per-workload
 * `--internal` network, and an egress container (the configured node image running
 * `EGRESS_PROXY_SCRIPT`) on that network and the default one is the only way out: the
 * server gets `HTTP_PROXY`/`HTTPS_PROXY` pointing at it, and, for HTTP servers, the egress
 * container publishes the loopback port and forwards inbound connections. A stdio server
 * whose profile allows nothing gets no network at all. Both containers get fixed addresses
 * on the internal network because there is no DNS on it (Podman with CNI has none).
 */
import { request as httpRequest } from 'node:http';
import type { Readable, Writable } from 'node:stream';
import type Docker from 'dockerode';
import { definedOnly, describeError, type Logger, SkepError, silentLogger } from '../../../shared/index.js';
import { EGRESS_CONFIG_ENV, EGRESS_PROXY_SCRIPT, type EgressConfig } from '../egress/egress-script.js';
import { RotatingLogFile } from '../log-file.js';
import type {
  ImageVerificationResult,
  Runtime,
  RuntimeHealth,
  ServerExit,
  ServerHandle,
  ServerSpec,
} from '../types.js';
import { attachStdio, dockerClient } from './client.js';
import { demultiplex, FrameDemuxer } from './demux.js';
import { LABEL_INSTANCE, LABEL_MANAGED, LABEL_WORKLOAD } from './labels.js';
import { type PullEvent, PullProgress } from './pull-progress.js';
import {
  egressConfigFor,
  labelsFor,
  planServer,
  type ServerNetworking,
  type ServerPlan,
  serverCreateOptions,
  serverEnv,
  useEgressProxy,
} from './server-container.js';

/** How long a stdio server gets to exit after its stdin closes, before SIGTERM, ms. */
const STDIN_EOF_WAIT_MS = 2000;

export interface DockerRuntimeOptions {
  /** Engine address (`unix:///...`, `tcp://...`). */
  host: string;
  /** Where the address came from (health detail). */
  source?: string;
  /** Identifies this Skep home among everything on the engine. */
  instance: string;
  logMaxBytes: number;
  logFiles: number;
  allowPrivileged: boolean;
  /** Local image with `node`/`npx`: runs `npx://` servers and the egress proxy. */
  nodeImage?: string;
  /** Local image with `uvx`: runs `uvx://` servers. */
  uvxImage?: string;
  /** Image for the egress proxy (needs `node`); defaults to `nodeImage`. */
  egressImage?: string;
  readyTimeoutMs?: number;
  /** Seconds between SIGTERM and SIGKILL on stop. */
  stopGraceSeconds?: number;
  logger?: Logger;
}

export class DockerRuntime implements Runtime {
  readonly name = 'docker' as const;
  readonly host: string;
  readonly docker: Docker;
  readonly #options: DockerRuntimeOptions;
  readonly #logger: Logger;

  constructor(options: DockerRuntimeOptions) {
    this.#options = options;
    this.host = options.host;
    this.docker = dockerClient(options.host);
    this.#logger = options.logger ?? silentLogger;
  }

  async health(): Promise<RuntimeHealth> {
    try {
      const version = (await this.docker.version()) as { Version?: string; Components?: { Name?: string }[] };
      const engine = version.Components?.some((c) => /podman/i.test(c.Name ?? '')) ? 'podman' : 'docker';
      return { ok: true, detail: `${engine} ${version.Version ?? '?'} at ${this.host}` };
    } catch (err) {
      return { ok: false, reason: `container engine at ${this.host} does not answer: ${describeError(err)}` };
    }
  }

  /** Labels that select everything of one workload of this Skep home. */
  #labelFilter(workload?: string): string[] {
    const labels = [`${LABEL_MANAGED}=true`, `${LABEL_INSTANCE}=${this.#options.instance}`];
    if (workload !== undefined) labels.push(`${LABEL_WORKLOAD}=${workload}`);
    return labels;
  }

  #resourceName(workload: string): string {
    return `skep-${this.#options.instance}-${workload}`;
  }

  /** Removes every container and network of `workload` (any state). */
  async removeWorkload(workload: string): Promise<void> {
    await this.#removeMatching(this.#labelFilter(workload));
  }

  /** Removes containers and networks of this Skep home whose workload is not in `known`. */
  async removeOrphans(known: ReadonlySet<string>): Promise<string[]> {
    const containers = await this.docker.listContainers({
      all: true,
      filters: { label: this.#labelFilter() },
    });
    const networks = await this.docker.listNetworks({ filters: { label: this.#labelFilter() } });
    const orphans = new Set<string>();
    for (const item of [...containers, ...networks]) {
      const workload = item.Labels?.[LABEL_WORKLOAD];
      if (workload !== undefined && !known.has(workload)) orphans.add(workload);
    }
    for (const workload of orphans) await this.removeWorkload(workload);
    if (orphans.size > 0)
      this.#logger.info({ orphans: [...orphans] }, 'removed containers of deleted workloads');
    return [...orphans];
  }

  async #removeMatching(labels: string[]): Promise<void> {
    const containers = await this.docker.listContainers({ all: true, filters: { label: labels } });
    await Promise.all(
      containers.map((c) =>
        this.docker
          .getContainer(c.Id)
          .remove({ force: true, v: true })
          .catch((err: unknown) => {
            if ((err as { statusCode?: number }).statusCode !== 404) throw err;
          }),
      ),
    );
    const networks = await this.docker.listNetworks({ filters: { label: labels } });
    for (const n of networks) {
      await this.docker
        .getNetwork(n.Id)
        .remove()
        .catch((err: unknown) => {
          if ((err as { statusCode?: number }).statusCode !== 404) throw err;
        });
    }
  }

  /** Makes sure `image` is present locally; pulls it (reporting progress) when it is not. */
  async ensureImage(image: string, onProgress?: (message: string) => void): Promise<'present' | 'pulled'> {
    try {
      await this.docker.getImage(image).inspect();
      return 'present';
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode !== 404) {
        throw new SkepError('bad_gateway', `cannot inspect image ${image}: ${describeError(err)}`, {
          cause: err,
        });
      }
    }
    onProgress?.(`pulling image ${image}: 0%`);
    try {
      await this.#pull(image, onProgress);
    } catch (err) {
      throw new SkepError('bad_gateway', `cannot pull image ${image}: ${describeError(err)}`, { cause: err });
    }
    // Some engines end a failed pull without an error event; the image must now exist.
    try {
      await this.docker.getImage(image).inspect();
    } catch (err) {
      throw new SkepError(
        'bad_gateway',
        `cannot pull image ${image}: the engine reported success but has no such image`,
        {
          cause: err,
        },
      );
    }
    onProgress?.(`pulling image ${image}: 100%`);
    return 'pulled';
  }

  /** Pulls `image`, reporting each change of the overall percentage; rejects on an error event. */
  async #pull(image: string, onProgress: ((message: string) => void) | undefined): Promise<void> {
    const progress = new PullProgress();
    let shown = 0;
    const stream = await this.docker.pull(image, await pullLogin(image));
    await new Promise<void>((resolve, reject) => {
      let failure: string | undefined;
      this.docker.modem.followProgress(
        stream,
        (err: Error | null) => {
          if (err !== null) reject(err);
          else if (failure !== undefined) reject(new Error(failure));
          else resolve();
        },
        (event: PullEvent) => {
          failure ??= progress.add(event);
          const percent = progress.percent();
          if (percent !== shown) {
            shown = percent;
            onProgress?.(`pulling image ${image}: ${percent}%`);
          }
        },
      );
    });
  }

  async start(spec: ServerSpec): Promise<ServerHandle> {
    let plan = planServer(spec, this.#options);
    let verified: ImageVerificationResult | undefined;
    if (spec.imageVerification !== undefined) {
      if (/^(npx|uvx|cmd):\/\//.test(spec.image)) {
        throw new SkepError(
          'invalid_config',
          `image_verification checks container images; '${spec.image}' is a package run in a base image: remove image_verification`,
        );
      }
      // Before any pull: a refused image is never fetched; a verified one runs by its digest.
      const { verifyImage } = await import('./image-verification.js');
      const checked = await verifyImage(plan.container.image, spec.imageVerification);
      verified = checked.result;
      if (verified.status === 'verified')
        this.#logger.info({ workload: spec.name, ...verified }, 'image verified');
      else
        this.#logger.warn(
          { workload: spec.name, ...verified },
          'image not verified; running under policy warn',
        );
      plan = { ...plan, container: { ...plan.container, image: checked.image } };
    }
    await this.ensureImage(plan.container.image, spec.onProgress);
    if (plan.egressImage !== undefined && plan.egressImage !== plan.container.image)
      await this.ensureImage(plan.egressImage, spec.onProgress);
    // A previous run of this workload (crash, killed runner) may have left things behind.
    await this.removeWorkload(spec.name);
    const log = new RotatingLogFile(spec.logFile, {
      maxBytes: this.#options.logMaxBytes,
      files: this.#options.logFiles,
    });
    try {
      const handle = await this.#startServer(spec, plan, log);
      return verified === undefined ? handle : { ...handle, imageVerification: verified };
    } catch (err) {
      log.close();
      await this.#cleanup(spec.name);
      if (err instanceof SkepError) throw err;
      throw new SkepError('bad_gateway', `cannot start container for '${spec.name}': ${describeError(err)}`, {
        cause: err,
      });
    }
  }

  /** Removes what `start` left of `workload`; never fails. */
  #cleanup(workload: string): Promise<void> {
    return this.removeWorkload(workload).catch(() => undefined);
  }

  /** Networks, the server container, its stdio or logs, and readiness; the caller cleans up on failure. */
  async #startServer(spec: ServerSpec, plan: ServerPlan, log: RotatingLogFile): Promise<ServerHandle> {
    const name = this.#resourceName(spec.name);
    const env = serverEnv(spec, plan.http);
    const net = await this.#serverNetworking(spec, plan, name, env, log);
    const container = await this.docker.createContainer(
      serverCreateOptions(name, plan, env, labelsFor(spec, this.#options.instance, 'server'), net),
    );
    let stdio: { stdin: Writable; stdout: Readable } | undefined;
    if (!plan.http) {
      const stream = await attachStdio(this.host, container.id);
      const stdout = demultiplex(stream, (chunk) => log.write(chunk));
      stdio = { stdin: stream, stdout };
    }
    await container.start();
    if (plan.http) this.#followLogs(container, log);
    const exited = this.#exitOf(container, spec.name, name, log);
    const stop = this.#stopper(container, spec.name, stdio, exited);
    let url: string | undefined;
    if (plan.http) {
      const path = spec.transport === 'sse' ? '/sse' : '/mcp';
      url = `http://127.0.0.1:${spec.targetPort}${path}`;
      try {
        await waitForHttp(spec.targetPort as number, exited, this.#options.readyTimeoutMs ?? 60_000);
      } catch (err) {
        await stop();
        throw err;
      }
    }
    this.#logger.info({ workload: spec.name, container: name }, 'container started');
    return {
      id: container.id,
      exited,
      stop,
      ...definedOnly({ stdio, url }),
    };
  }

  /**
   * How the server container joins the network (`plan.network`). For `egress` this creates
   * the internal network, starts the egress proxy on it and points `env` at the proxy.
   */
  async #serverNetworking(
    spec: ServerSpec,
    plan: ServerPlan,
    name: string,
    env: Record<string, string>,
    log: RotatingLogFile,
  ): Promise<ServerNetworking> {
    const hostConfig: Docker.HostConfig = { Binds: plan.binds, Privileged: plan.profile.privileged === true };
    const exposed: Record<string, object> = {};
    const portKey = `${spec.targetPort}/tcp`;
    if (plan.network === 'none') {
      hostConfig.NetworkMode = 'none';
      return { hostConfig, networking: undefined, exposed };
    }
    if (plan.network === 'default') {
      hostConfig.NetworkMode = 'bridge';
      if (plan.http) {
        exposed[portKey] = {};
        hostConfig.PortBindings = { [portKey]: [{ HostIp: '127.0.0.1', HostPort: String(spec.targetPort) }] };
      }
      return { hostConfig, networking: undefined, exposed };
    }
    const { network, serverIp } = await this.#startEgressNetwork(spec, plan, name, env, log);
    hostConfig.NetworkMode = network;
    if (plan.http) exposed[portKey] = {};
    const networking = { EndpointsConfig: { [network]: { IPAMConfig: { IPv4Address: serverIp } } } };
    return { hostConfig, networking, exposed };
  }

  /** The internal network and the egress proxy on it; `env` then sends the server's traffic there. */
  async #startEgressNetwork(
    spec: ServerSpec,
    plan: ServerPlan,
    name: string,
    env: Record<string, string>,
    log: RotatingLogFile,
  ): Promise<{ network: string; serverIp: string }> {
    const instance = this.#options.instance;
    const { network, serverIp, egressIp, gateways } = await this.#createInternalNetwork(
      name,
      labelsFor(spec, instance, 'network'),
    );
    await this.#startEgress(
      `${name}-egress`,
      plan.egressImage as string,
      egressConfigFor(spec, plan, serverIp, gateways),
      network,
      egressIp,
      labelsFor(spec, instance, 'egress'),
      plan.http ? spec.targetPort : undefined,
      log,
    );
    useEgressProxy(env, egressIp);
    return { network, serverIp };
  }

  /** Settles when the container exits; a lost container counts as exited (and is logged). */
  #exitOf(
    container: Docker.Container,
    workload: string,
    name: string,
    log: RotatingLogFile,
  ): Promise<ServerExit> {
    const exited: Promise<ServerExit> = container
      .wait()
      .then((r: { StatusCode?: number }) => ({ code: r.StatusCode ?? null, signal: null }))
      .catch((err: unknown) => {
        // The server's log gets one readable line (a stack of engine-API internals is noise
        // among the server's output); the runner's log gets the error with its stack.
        log.write(`[skep] lost track of container ${name}: ${describeError(err)}\n`);
        this.#logger.warn({ workload, container: name, err }, 'lost track of a container');
        return { code: null, signal: null };
      });
    void exited.then(() => log.close());
    return exited;
  }

  /** The handle's `stop`: idempotent; the container and everything of its workload are removed. */
  #stopper(
    container: Docker.Container,
    workload: string,
    stdio: { stdin: Writable } | undefined,
    exited: Promise<ServerExit>,
  ): () => Promise<void> {
    const grace = this.#options.stopGraceSeconds ?? 5;
    let stopping: Promise<void> | undefined;
    return () => {
      stopping ??= (async () => {
        // MCP stdio shutdown: close the server's input and let it exit, then SIGTERM. A
        // server running as PID 1 (node, say) ignores SIGTERM and would cost the whole grace.
        if (stdio !== undefined) {
          stdio.stdin.end();
          await Promise.race([exited, new Promise((r) => setTimeout(r, STDIN_EOF_WAIT_MS).unref())]);
        }
        await container.stop({ t: grace }).catch(() => undefined);
        await this.#cleanup(workload);
        await Promise.race([exited, new Promise((r) => setTimeout(r, 5000).unref())]);
      })();
      return stopping;
    };
  }

  /**
   * A per-workload internal network, the fixed addresses of the server and the egress proxy on
   * it, and its gateway addresses (the host, as seen from the network).
   */
  async #createInternalNetwork(name: string, labels: Record<string, string>) {
    const created = await this.docker.createNetwork({
      Name: name,
      Internal: true,
      CheckDuplicate: true,
      Labels: labels,
    });
    const info = (await this.docker.getNetwork(created.id).inspect()) as {
      Name?: string;
      IPAM?: { Config?: { Subnet?: string; Gateway?: string }[] };
    };
    const subnet = info.IPAM?.Config?.find((c) => c.Subnet?.includes('.'))?.Subnet;
    const match = subnet === undefined ? null : /^(\d+)\.(\d+)\.(\d+)\.(\d+)\/(\d+)$/.exec(subnet);
    if (match === null || Number(match[5]) > 28) {
      throw new Error(`internal network ${name} has no usable IPv4 subnet (${subnet ?? 'none'})`);
    }
    const base =
      (Number(match[1]) << 24) | (Number(match[2]) << 16) | (Number(match[3]) << 8) | Number(match[4]);
    const ip = (offset: number) => {
      const n = (base + offset) >>> 0;
      return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
    };
    const gateways = (info.IPAM?.Config ?? []).flatMap((c) => (c.Gateway ? [c.Gateway] : []));
    return { network: info.Name ?? name, egressIp: ip(10), serverIp: ip(11), gateways };
  }

  async #startEgress(
    name: string,
    image: string,
    config: EgressConfig,
    network: string,
    ip: string,
    labels: Record<string, string>,
    publishPort: number | undefined,
    log: RotatingLogFile,
  ): Promise<void> {
    const portKey = `${publishPort}/tcp`;
    const egress = await this.docker.createContainer({
      name,
      Image: image,
      Entrypoint: ['node'],
      Cmd: ['-e', EGRESS_PROXY_SCRIPT],
      Env: [`${EGRESS_CONFIG_ENV}=${JSON.stringify(config)}`],
      Labels: labels,
      Tty: false,
      ...(publishPort === undefined ? {} : { ExposedPorts: { [portKey]: {} } }),
      HostConfig: {
        NetworkMode: 'bridge',
        ...(publishPort === undefined
          ? {}
          : { PortBindings: { [portKey]: [{ HostIp: '127.0.0.1', HostPort: String(publishPort) }] } }),
      },
    });
    // Started on the default network alone, then joined to the internal one: the engine sets up
    // the published port for the networks attached at start, and with both attached it could
    // forward to the internal address, which the host cannot reach (the port then answered with
    // someone else's 404, now and then).
    await egress.start();
    await this.docker
      .getNetwork(network)
      .connect({ Container: egress.id, EndpointConfig: { IPAMConfig: { IPv4Address: ip } } });
    const stream = await egress.logs({ follow: true, stdout: true, stderr: true });
    const demuxer = new FrameDemuxer((_, payload) =>
      log.write(Buffer.concat([Buffer.from('[egress] '), payload])),
    );
    stream.on('data', (chunk: Buffer) => demuxer.push(chunk));
    stream.on('error', () => undefined);
    // The proxy must listen before the server starts using it.
    await this.#egressListening(egress);
  }

  /** Waits (30 s at most) until the egress proxy says it listens; fails when it exits first. */
  async #egressListening(egress: Docker.Container): Promise<void> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const text = await this.#logsText(egress);
      if (text.includes('egress proxy listening')) return;
      const state = (await egress.inspect()).State;
      if (state?.Running !== true) throw new Error(`the egress proxy exited: ${text.trim().slice(-500)}`);
      if (Date.now() > deadline) throw new Error('the egress proxy did not start within 30 s');
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async #logsText(container: Docker.Container): Promise<string> {
    const raw = await container.logs({ stdout: true, stderr: true, follow: false });
    const parts: Buffer[] = [];
    new FrameDemuxer((_, payload) => parts.push(payload)).push(
      Buffer.isBuffer(raw) ? raw : Buffer.from(String(raw)),
    );
    return Buffer.concat(parts).toString('utf8');
  }

  #followLogs(container: Docker.Container, log: RotatingLogFile): void {
    container
      .logs({ follow: true, stdout: true, stderr: true })
      .then((stream) => {
        const s = stream;
        const demuxer = new FrameDemuxer((_, payload) => log.write(payload));
        s.on('data', (chunk: Buffer) => demuxer.push(chunk));
        s.on('error', () => undefined);
      })
      .catch((err: unknown) => {
        // As for a lost container: one line in the server's log, the stack in the runner's.
        log.write(`[skep] cannot follow container logs: ${describeError(err)}\n`);
        this.#logger.warn({ container: container.id, err }, 'cannot follow container logs');
      });
  }
}

/** Ready once the port answers HTTP at all (any status): the server or the inbound forwarder reached it. */
function waitForHttp(port: number, exited: Promise<ServerExit>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  return new Promise((resolve, reject) => {
    const attempt = () => {
      if (gone) return reject(new Error(`the server exited before answering on port ${port}`));
      const req = httpRequest({ host: '127.0.0.1', port, path: '/', method: 'GET', timeout: 2000 }, (res) => {
        res.resume();
        resolve();
      });
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', () => {
        if (Date.now() > deadline)
          reject(new Error(`the server did not answer on port ${port} within ${timeoutMs} ms`));
        else setTimeout(attempt, 200);
      });
      req.end();
    };
    attempt();
  });
}

/**
 * The login for pulling `image`, found where the image check finds its own
 * (`oci-signature-credentials.ts`) and sent as the Engine API's `X-Registry-Auth`: the pull and
 * the signature lookup log in alike, and a Docker daemon, which reads no client configuration,
 * gets the login the docker CLI would send. None found: the engine's own default (Podman's
 * service reads its auth files; Docker pulls anonymously).
 */
async function pullLogin(
  image: string,
): Promise<{ authconfig?: { username: string; password: string; serveraddress: string } }> {
  const [{ parseImageRef }, { findRegistryCredentials }] = await Promise.all([
    import('../../../protocol/oci-signature-registry.js'),
    import('../../../protocol/oci-signature-credentials.js'),
  ]);
  let ref;
  try {
    ref = parseImageRef(image);
  } catch {
    return {};
  }
  const login = await findRegistryCredentials(ref.registry, ref.repository);
  if (login.found === undefined) return {};
  const { username, password } = login.found;
  return { authconfig: { username, password, serveraddress: ref.registry } };
}
