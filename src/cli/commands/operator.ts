/**
 * `skep operator`: runs the MCPExternalAuthConfig controller and its validating admission
 * webhook. The kubeconfig comes from the default loading rules (KUBECONFIG, ~/.kube/config,
 * in-cluster service account). The webhook serves the certificate from --tls-cert/--tls-key
 * (mounted by cert-manager in deploy/), or a self-signed one for local runs.
 */
import { readFileSync } from 'node:fs';
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
    .action(async (opts: OperatorOptions) => {
      // Loaded on demand: the Kubernetes client is large and only this command needs it.
      const {
        createKubeClient,
        ExtAuthController,
        generateSelfSignedCert,
        kubeSecretReader,
        loadKubeConfig,
        startWebhook,
      } = await import('../../operator/index.js');
      const logger = createLogger({ name: 'operator' });
      const kube = createKubeClient(loadKubeConfig());
      const controller = new ExtAuthController({
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
      await controller.start();
      logger.info({ namespace: opts.namespace ?? '(all)' }, 'controller running');
      await new Promise<void>((resolve) => {
        const stop = () => resolve();
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      });
      await controller.close();
      await webhook?.close();
    });
}
