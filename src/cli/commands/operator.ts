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
import type { Command } from 'commander';
import { createLogger, SkepError } from '../../shared/index.js';

interface OperatorOptions {
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

export function registerOperator(program: Command): void {
  program
    .command('operator')
    .description('Run the Kubernetes controller and admission webhook for MCPExternalAuthConfig')
    .option('-n, --namespace <ns>', 'watch one namespace (default: all)')
    .option('--no-webhook', 'do not serve the admission webhook')
    .option('--webhook-host <host>', 'webhook bind address', '0.0.0.0')
    .option('--webhook-port <port>', 'webhook HTTPS port', '9443')
    .option('--tls-cert <file>', 'PEM certificate for the webhook')
    .option('--tls-key <file>', 'PEM private key for the webhook')
    .option('--self-signed <hosts...>', 'issue a self-signed certificate for these hosts instead')
    .option('--no-leader-elect', 'run the controller without electing a leader (one replica only)')
    .option('--leader-election-namespace <ns>', 'namespace of the Lease (default: the pod’s namespace)')
    .option('--leader-election-id <name>', 'name of the Lease', 'skep-operator')
    .action(async (opts: OperatorOptions) => {
      // Loaded on demand: the Kubernetes client is large and only this command needs it.
      const {
        createKubeClient,
        ExtAuthController,
        generateSelfSignedCert,
        kubeSecretReader,
        LeaderElector,
        loadKubeConfig,
        startWebhook,
      } = await import('../../operator/index.js');
      const logger = createLogger({ name: 'operator' });
      const kube = createKubeClient(loadKubeConfig());
      const newController = () =>
        new ExtAuthController({
          kube,
          logger,
          ...(opts.namespace ? { namespace: opts.namespace } : {}),
        });
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
          await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
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
    });
}
