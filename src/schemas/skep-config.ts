/**
 * The config file (`config.yaml`) of `skep serve` and the CLI. Every default lives here, with
 * its unit; `src/config/config.ts` reads the file and validates with it.
 */
import { type Static, Type } from 'typebox';

export const ConfigSchema = Type.Object(
  {
    server: Type.Object(
      {
        host: Type.String({ default: '127.0.0.1', description: 'Management API bind address.' }),
        port: Type.Integer({
          minimum: 0,
          maximum: 65535,
          default: 8080,
          description: 'Management API TCP port.',
        }),
        allowed_hosts: Type.Array(Type.String(), {
          default: [],
          description: 'Extra Host/Origin names accepted besides loopback names (DNS-rebinding guard).',
        }),
        allowed_origins: Type.Array(Type.String(), {
          default: [],
          description:
            'Browser origins (`https://ui.example.com`, exact) allowed to call the API besides its own; added to `skep serve --allowed-origin`.',
        }),
        tls_cert: Type.Optional(
          Type.String({
            description: 'PEM certificate (chain) file: the API serves HTTPS (with `tls_key`).',
          }),
        ),
        tls_key: Type.Optional(Type.String({ description: 'PEM private key file of `tls_cert`.' })),
      },
      { default: {}, additionalProperties: false },
    ),
    runtime: Type.Object(
      {
        type: Type.Union([Type.Literal('auto'), Type.Literal('process'), Type.Literal('docker')], {
          default: 'auto',
          description: '`auto` uses a container engine when one answers, else local processes.',
        }),
        docker_host: Type.Optional(
          Type.String({ description: 'Engine socket, e.g. unix:///run/podman/podman.sock' }),
        ),
        node_image: Type.Optional(
          Type.String({
            description:
              'Local image with node/npx: runs npx:// servers in containers and the egress proxy of restricted profiles (never pulled by Skep if present).',
          }),
        ),
        uvx_image: Type.Optional(
          Type.String({ description: 'Local image with uvx: runs uvx:// servers in containers.' }),
        ),
        egress_image: Type.Optional(
          Type.String({ description: 'Image with node for the egress proxy; defaults to node_image.' }),
        ),
        allow_privileged: Type.Boolean({
          default: false,
          description: 'Allow permission profiles that ask for privileged containers.',
        }),
        sandbox: Type.Optional(
          Type.String({
            default: 'auto',
            pattern: '^(auto|bwrap|off|/.+)$',
            description:
              'Sandbox of local (process) servers: `auto` (bubblewrap when it works here), `bwrap` (required), `off`, or the absolute path of a bwrap binary (required).',
          }),
        ),
      },
      { default: {}, additionalProperties: false },
    ),
    workloads: Type.Object(
      {
        port_range_start: Type.Integer({ minimum: 1024, maximum: 65535, default: 20000 }),
        port_range_end: Type.Integer({ minimum: 1024, maximum: 65535, default: 29999 }),
        log_max_bytes: Type.Integer({
          minimum: 4096,
          default: 10 * 1024 * 1024,
          description: 'Rotate a log file past this size (bytes).',
        }),
        log_files: Type.Integer({
          minimum: 1,
          maximum: 20,
          default: 3,
          description: 'Rotated log files kept per workload.',
        }),
      },
      { default: {}, additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

export type ConfigFile = Static<typeof ConfigSchema>;
