/** `skep operator`: the Kubernetes operator and its offline tools (`actions/operator.ts`). */
import type { Command } from 'commander';
import { lazyAction } from '../lazy-action.js';

export function registerOperator(program: Command): void {
  const operator = program
    .command('operator')
    .description('The Kubernetes operator: run it, render or validate custom resources offline');
  operator
    .command('render')
    .description('Print the objects the controller would apply for the custom resources in a file')
    .requiredOption(
      '-f, --file <path>',
      "YAML with the resources and the Secrets/configs they reference ('-' for stdin)",
    )
    .option(
      '--runner-image <image>',
      'image of the Skep runner (default: $SKEP_RUNNER_IMAGE or the release image)',
    )
    .option('-n, --namespace <ns>', 'namespace of resources that name none', 'default')
    .option(
      '--offline',
      "never read an image's entrypoint from its registry (name the images that need a command)",
    )
    .action(lazyAction(async () => (await import('../actions/operator.js')).render));
  operator
    .command('validate')
    .description('Validate skep.dev/v1beta1 resources offline (every kind; Secrets are not read)')
    .requiredOption('-f, --file <path>', "file with one or more documents ('-' for stdin)")
    .action(lazyAction(async () => (await import('../actions/operator.js')).validate));
  operator
    .command('pod-runner')
    .description('Run the workload of a mounted run configuration in the foreground (inside a pod)')
    .requiredOption('--config <file>', 'the run configuration (runconfig.json)')
    .action(lazyAction(async () => (await import('../actions/operator.js')).podRunner));
  operator
    .command('registry-server')
    .description("Serve an MCPRegistry's registry API read-only from its configuration (inside a pod)")
    .requiredOption('--config <file>', 'the registry configuration (config.yaml)')
    .option('--port <port>', 'TCP port (default 8080)', (v) => Number(v))
    .action(lazyAction(async () => (await import('../actions/operator.js')).registryServer));
  operator
    .command('run', { isDefault: true })
    .description('Run the Kubernetes controller and admission webhook (the default)')
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
    .option(
      '--runner-image <image>',
      'image of the Skep runner in workload pods (default: $SKEP_RUNNER_IMAGE)',
    )
    .action(lazyAction(async () => (await import('../actions/operator.js')).run));
}
