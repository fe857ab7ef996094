/**
 * The native view: a `server.json` entry seen as the ToolHive-style `ImageServer` or
 * `RemoteServer` of ToolHive's native registry content.
 *
 * Differences from the reference on purpose: npm and PyPI packages are not dropped but
 * become `npx://<pkg>` and `uvx://<pkg>` images, which Skep's process runtime runs; an
 * entry with both a package and a remote is a remote (as in the reference).
 */
import {
  type Argument,
  type CatalogServer,
  type EnvVar,
  EXTENSION_KEY,
  type Header,
  type ImageServer,
  type NamedInput,
  PUBLISHER_META_KEY,
  type RemoteServer,
  type ServerExtension,
} from '../schemas/registry/index.js';
import { isRecord } from '../shared/index.js';

/** The first object under `_meta[publisher-provided][io.github.stacklok]` (its key is the image or URL). */
export function readExtension(server: CatalogServer): ServerExtension {
  const publisher = server._meta?.[PUBLISHER_META_KEY];
  if (!isRecord(publisher)) return {};
  const byKey = publisher[EXTENSION_KEY];
  if (!isRecord(byKey)) return {};
  for (const value of Object.values(byKey)) {
    if (isRecord(value)) return value;
  }
  return {};
}

/** Whether the entry is a remote server (it has a `remotes` entry). */
export function isRemote(server: CatalogServer): boolean {
  return (server.remotes?.length ?? 0) > 0;
}

/** Whether the entry can be shown natively at all (it has a remote or a package). */
export function hasRunnable(server: CatalogServer): boolean {
  return isRemote(server) || (server.packages?.length ?? 0) > 0;
}

function envVar(input: NamedInput): EnvVar {
  return {
    name: input.name,
    description: input.description ?? '',
    required: input.isRequired ?? false,
    ...(input.isSecret === true ? { secret: true } : {}),
    ...(input.default !== undefined ? { default: input.default } : {}),
  };
}

function header(input: NamedInput): Header {
  return { ...envVar(input), ...(input.choices !== undefined ? { choices: input.choices } : {}) };
}

/** The image reference the runtimes understand, from the package of the entry. */
export function imageOf(pkg: NonNullable<CatalogServer['packages']>[number]): string {
  const at =
    pkg.version !== undefined && pkg.version !== '' && pkg.version !== 'latest' ? pkg.version : undefined;
  switch (pkg.registryType) {
    case 'npm':
      return `npx://${pkg.identifier}${at !== undefined ? `@${at}` : ''}`;
    case 'pypi':
      return `uvx://${pkg.identifier}${at !== undefined ? `@${at}` : ''}`;
    default:
      // OCI (and anything unknown): the identifier is the image reference; a separate
      // version is appended only when the identifier carries no tag or digest.
      if (at !== undefined && !/[:@][^/]+$/.test(pkg.identifier)) return `${pkg.identifier}:${at}`;
      return pkg.identifier;
  }
}

function flattenArgs(args: Argument[] | undefined): string[] | undefined {
  if (args === undefined || args.length === 0) return undefined;
  const out: string[] = [];
  for (const arg of args) {
    const value = arg.value ?? arg.default;
    if (arg.type === 'named' && arg.name !== undefined) {
      out.push(arg.name);
      if (value !== undefined) out.push(value);
    } else if (value !== undefined) {
      out.push(value);
    } else if (arg.valueHint !== undefined) {
      out.push(`<${arg.valueHint}>`);
    }
  }
  return out;
}

function portOf(url: string | undefined): number | undefined {
  if (url === undefined) return undefined;
  try {
    const port = new URL(url).port;
    return port === '' ? undefined : Number(port);
  } catch {
    return undefined;
  }
}

function base(server: CatalogServer, ext: ServerExtension, transport: string) {
  return {
    name: server.name,
    ...(server.title !== undefined ? { title: server.title } : {}),
    description: server.description,
    ...(ext.overview !== undefined ? { overview: ext.overview } : {}),
    tier: ext.tier ?? 'Community',
    status: ext.status ?? 'active',
    transport,
    ...(ext.stateless !== undefined ? { stateless: ext.stateless } : {}),
    tools: ext.tools ?? [],
    ...(ext.tags !== undefined ? { tags: ext.tags } : {}),
    ...(ext.metadata !== undefined ? { metadata: ext.metadata } : {}),
    ...(server.repository?.url !== undefined ? { repository_url: server.repository.url } : {}),
    ...(ext.custom_metadata !== undefined ? { custom_metadata: ext.custom_metadata } : {}),
    ...(ext.proxy_port !== undefined ? { proxy_port: ext.proxy_port } : {}),
  };
}

export function toRemoteServer(server: CatalogServer): RemoteServer {
  const remote = server.remotes?.[0];
  if (remote === undefined) throw new TypeError(`${server.name} has no remote`);
  const ext = readExtension(server);
  return {
    ...base(server, ext, remote.type),
    url: remote.url,
    ...(remote.headers !== undefined && remote.headers.length > 0
      ? { headers: remote.headers.map(header) }
      : {}),
    ...(ext.oauth_config !== undefined ? { oauth_config: ext.oauth_config } : {}),
    ...(ext.env_vars !== undefined ? { env_vars: ext.env_vars } : {}),
  };
}

export function toImageServer(server: CatalogServer): ImageServer {
  // Prefer an OCI package (what the container runtime runs), else the first package.
  const pkg = server.packages?.find((p) => p.registryType === 'oci') ?? server.packages?.[0];
  if (pkg === undefined) throw new TypeError(`${server.name} has no package`);
  const ext = readExtension(server);
  const env = pkg.environmentVariables?.map(envVar);
  const args = flattenArgs(pkg.packageArguments) ?? ext.args;
  const targetPort = portOf(pkg.transport.url) ?? ext.target_port;
  return {
    ...base(server, ext, pkg.transport.type),
    image: imageOf(pkg),
    ...(ext.docker_tags !== undefined ? { docker_tags: ext.docker_tags } : {}),
    ...(args !== undefined ? { args } : {}),
    ...(env !== undefined && env.length > 0 ? { env_vars: env } : {}),
    ...(targetPort !== undefined ? { target_port: targetPort } : {}),
    ...(ext.permissions !== undefined ? { permissions: ext.permissions } : {}),
    ...(ext.provenance !== undefined ? { provenance: ext.provenance } : {}),
  };
}
