/**
 * `skep operator`: runs the MCPExternalAuthConfig controller and its validating admission
 * webhook. The kubeconfig comes from the default loading rules (KUBECONFIG, ~/.kube/config,
 * in-cluster service account). The webhook serves the certificate from --tls-cert/--tls-key
 * (mounted by cert-manager in deploy/), or a self-signed one for local runs. Replicas elect a
 * leader over a Lease (`--no-leader-elect` to run the controller unconditionally); the
 * webhook serves on every replica.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { parseAllDocuments } from 'yaml';
import { createLogger, SkepError, untilAborted } from '../../../shared/index.js';
import { readInputFile } from '../input-file.js';

export interface OperatorOptions {
  namespace?: string;
  webhook: boolean;
  webhookHost: string;
  webhookPort: string;
  tlsCert?: string;
  tlsKey?: string;
  selfSigned?: string[];
  leaderElect: boolean;
  leaderElectionNamespace?: string;
  leaderElectionId: string;
  runnerImage?: string;
}

const SERVICE_ACCOUNT_NAMESPACE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

/** Where the Lease lives: the flag, else the pod's namespace, else `default`. */
function leaseNamespace(flag: string | undefined): string {
  if (flag !== undefined) return flag;
  const fromEnv = process.env['POD_NAMESPACE'];
  if (fromEnv) return fromEnv;
  if (existsSync(SERVICE_ACCOUNT_NAMESPACE)) return readFileSync(SERVICE_ACCOUNT_NAMESPACE, 'utf8').trim();
  return 'default';
}

/** Reads a YAML/JSON multi-document file ('-' for stdin); `invalid_config` naming the file otherwise. */
function readDocuments(file: string): unknown[] {
  const text = readInputFile(file, { dashIsStdin: true });
  const docs: unknown[] = [];
  parseAllDocuments(text).forEach((doc, i) => {
    if (doc.errors.length > 0)
      throw new SkepError(
        'invalid_config',
        `${file} document ${i + 1}: ${doc.errors.map((e) => e.message).join('; ')}`,
      );
    const value = doc.toJS() as unknown;
    if (value !== null && value !== undefined) docs.push(value);
  });
  if (docs.length === 0) throw new SkepError('invalid_config', `${file} holds no documents`);
  return docs;
}

export async function render(opts: {
  file: string;
  runnerImage?: string;
  namespace: string;
  offline?: boolean;
}): Promise<void> {
  const { renderResources, renderYaml } = await import('../../operator/render.js');
  const docs = readDocuments(opts.file);
  const result = await renderResources(docs, {
    namespace: opts.namespace,
    offline: opts.offline === true,
    ...(opts.runnerImage === undefined ? {} : { runnerImage: opts.runnerImage }),
  });
  if (result.problems.length > 0) {
    throw new SkepError(
      'invalid_config',
      `cannot render: ${result.problems.map((p) => `${p.resource}: ${p.problem}`).join('; ')}`,
    );
  }
  for (const s of result.skipped) process.stderr.write(`${s.resource}: skipped (${s.reason})\n`);
  for (const w of result.warnings) process.stderr.write(`warning: ${w.resource}: ${w.problem}\n`);
  process.stdout.write(renderYaml(result.objects));
}

export async function validate(opts: { file: string }): Promise<void> {
  const { validateResource } = await import('../../operator/resource-validate.js');
  const { formatProblem } = await import('../../operator/validate.js');
  let invalid = 0;
  const docs = readDocuments(opts.file);
  for (const doc of docs) {
    const d = doc as { apiVersion?: unknown; kind?: unknown; metadata?: { name?: unknown } };
    const label = `${String(d.kind ?? '?')}/${String(d.metadata?.name ?? '?')}`;
    if (typeof d.apiVersion === 'string' && !d.apiVersion.startsWith('skep.dev/')) {
      process.stdout.write(`${label}: skipped (not a skep.dev resource)\n`);
      continue;
    }
    const { problems } = validateResource(doc);
    if (problems.length === 0) process.stdout.write(`${label}: valid\n`);
    else invalid++;
    for (const p of problems) process.stdout.write(`${label}: ${formatProblem(p)}\n`);
  }
  if (invalid > 0) throw new SkepError('invalid_config', `${invalid} of ${docs.length} document(s) invalid`);
}

export async function podRunner(opts: { config: string }): Promise<void> {
  const { runPodRunner } = await import('../../operator/pod-runner.js');
  process.exitCode = await runPodRunner({ configFile: opts.config });
  // Closed Redis/HTTP keep-alive sockets must not hold the pod open after a stop.
  process.exit();
}

export async function registryServer(opts: { config: string; port?: number }): Promise<void> {
  const { startRegistryServer } = await import('../../operator/registry-server.js');
  const server = await startRegistryServer({
    configFile: opts.config,
    ...(opts.port === undefined ? {} : { port: opts.port }),
  });
  const stop = () => void server.close().then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

export async function run(opts: OperatorOptions): Promise<void> {
  // Loaded on demand: the Kubernetes client is large and only this command needs it.
  const {
    createKubeClient,
    ExtAuthController,
    sharedConfigControllers,
    generateSelfSignedCert,
    kubeSecretReader,
    LeaderElector,
    loadKubeConfig,
    startWebhook,
  } = await import('../../operator/index.js');
  const logger = createLogger({ name: 'operator' });
  const kc = loadKubeConfig();
  const kube = createKubeClient(kc);
  const { createObjectClient } = await import('../../operator/kube.js');
  const { WorkloadController } = await import('../../operator/workload-controller.js');
  const objects = createObjectClient(kc);
  const scope = opts.namespace ? { namespace: opts.namespace } : {};
  // Both controllers run on the leader: MCPExternalAuthConfig and the workload kinds.
  const newController = () => {
    const extauth = new ExtAuthController(Object.assign({ kube, logger }, scope));
    // MCPToolConfig, MCPOIDCConfig, MCPAuthzConfig, MCPTelemetryConfig, MCPWebhookConfig.
    const configs = sharedConfigControllers(Object.assign({ kube, logger }, scope));
    const workloads = new WorkloadController(
      Object.assign(
        {
          kube,
          objects,
          logger,
          render: opts.runnerImage === undefined ? {} : { runnerImage: opts.runnerImage },
        },
        scope,
      ),
    );
    return {
      start: async () => {
        await extauth.start();
        for (const c of configs) await c.start();
        await workloads.start();
      },
      close: async () => {
        await workloads.close();
        for (const c of configs) await c.close();
        await extauth.close();
      },
    };
  };
  let webhook: Awaited<ReturnType<typeof startWebhook>> | undefined;
  if (opts.webhook) {
    let tls: { cert: string; key: string };
    if (opts.tlsCert !== undefined && opts.tlsKey !== undefined) {
      tls = { cert: readFileSync(opts.tlsCert, 'utf8'), key: readFileSync(opts.tlsKey, 'utf8') };
    } else if (opts.selfSigned !== undefined) {
      tls = generateSelfSignedCert(opts.selfSigned);
    } else {
      throw new SkepError(
        'bad_request',
        'the webhook needs --tls-cert and --tls-key, or --self-signed <hosts...>, or --no-webhook',
      );
    }
    webhook = await startWebhook({
      ...tls,
      host: opts.webhookHost,
      port: Number(opts.webhookPort),
      readSecret: kubeSecretReader(kube, logger),
      logger,
    });
    logger.info({ port: webhook.port }, 'admission webhook listening');
  }
  const stopped = new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      logger.info({ signal }, 'shutting down');
      resolve();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  if (opts.leaderElect) {
    const elector = new LeaderElector({
      kube,
      namespace: leaseNamespace(opts.leaderElectionNamespace),
      name: opts.leaderElectionId,
      identity: `${hostname()}_${randomUUID().slice(0, 8)}`,
      logger,
    });
    void elector.run(async (signal) => {
      const controller = newController();
      await controller.start();
      logger.info({ namespace: opts.namespace ?? '(all)' }, 'controller running');
      // A SIGTERM can arrive while the controller starts: the wait must see an earlier abort.
      await untilAborted(signal);
      await controller.close();
      logger.info('controller stopped');
    });
    await stopped;
    await elector.close();
  } else {
    const controller = newController();
    await controller.start();
    logger.info({ namespace: opts.namespace ?? '(all)' }, 'controller running');
    await stopped;
    await controller.close();
  }
  await webhook?.close();
  await new Promise<void>((resolve) => logger.flush(() => resolve()));
  // The Kubernetes client's closed watches can leave keep-alive sockets that would hold the
  // process for minutes; everything is shut down, so leave now.
  process.exit(0);
}
