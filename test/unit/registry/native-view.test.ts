import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CatalogServer } from '../../../src/registry/index.js';
import { imageOf, toImageServer, toRemoteServer } from '../../../src/registry/native-view.js';

const META = 'io.modelcontextprotocol.registry/publisher-provided';

test('ImageServer: an OCI package with the extension becomes an ImageServer with every field', () => {
  const server: CatalogServer = {
    name: 'io.github.acme/weather',
    title: 'Weather',
    description: 'Forecasts',
    version: '1.0.0',
    repository: { url: 'https://github.com/acme/weather', source: 'github' },
    packages: [
      {
        registryType: 'oci',
        identifier: 'ghcr.io/acme/weather:2.1',
        transport: { type: 'streamable-http', url: 'http://localhost:8080/mcp' },
        environmentVariables: [
          { name: 'API_KEY', description: 'key', isRequired: true, isSecret: true },
          { name: 'UNITS', description: 'units', default: 'metric' },
        ],
        packageArguments: [
          { type: 'positional', value: 'serve' },
          { type: 'named', name: '--port', value: '8080' },
        ],
      },
    ],
    _meta: {
      [META]: {
        'io.github.stacklok': {
          'ghcr.io/acme/weather:2.1': {
            tier: 'Official',
            status: 'active',
            tools: ['forecast'],
            tags: ['weather'],
            permissions: { network: { outbound: { allow_host: ['api.acme.dev'], allow_port: [443] } } },
            provenance: {
              sigstore_url: 'tlog.sigstore.dev',
              repository_uri: 'https://github.com/acme/weather',
            },
            docker_tags: ['2.1', 'latest'],
            metadata: { stars: 12, last_updated: '2026-01-01T00:00:00Z' },
            custom_metadata: { team: 'x' },
            proxy_port: 9000,
          },
        },
      },
    },
  };
  assert.deepEqual(toImageServer(server), {
    name: 'io.github.acme/weather',
    title: 'Weather',
    description: 'Forecasts',
    tier: 'Official',
    status: 'active',
    transport: 'streamable-http',
    tools: ['forecast'],
    tags: ['weather'],
    metadata: { stars: 12, last_updated: '2026-01-01T00:00:00Z' },
    repository_url: 'https://github.com/acme/weather',
    custom_metadata: { team: 'x' },
    proxy_port: 9000,
    image: 'ghcr.io/acme/weather:2.1',
    docker_tags: ['2.1', 'latest'],
    args: ['serve', '--port', '8080'],
    env_vars: [
      { name: 'API_KEY', description: 'key', required: true, secret: true },
      { name: 'UNITS', description: 'units', required: false, default: 'metric' },
    ],
    target_port: 8080,
    permissions: { network: { outbound: { allow_host: ['api.acme.dev'], allow_port: [443] } } },
    provenance: { sigstore_url: 'tlog.sigstore.dev', repository_uri: 'https://github.com/acme/weather' },
  });
});

test('npm and PyPI packages become npx:// and uvx:// images (the reference drops them)', () => {
  const t = { type: 'stdio' };
  assert.equal(imageOf({ registryType: 'npm', identifier: '@scope/pkg', transport: t }), 'npx://@scope/pkg');
  assert.equal(
    imageOf({ registryType: 'npm', identifier: 'pkg', version: '1.2.3', transport: t }),
    'npx://pkg@1.2.3',
  );
  assert.equal(
    imageOf({ registryType: 'pypi', identifier: 'mcp-server-x', version: '0.3', transport: t }),
    'uvx://mcp-server-x@0.3',
  );
  assert.equal(
    imageOf({ registryType: 'oci', identifier: 'mcp/time', version: '1.0', transport: t }),
    'mcp/time:1.0',
  );
  assert.equal(
    imageOf({ registryType: 'oci', identifier: 'mcp/time:2', version: '1.0', transport: t }),
    'mcp/time:2',
  );
  assert.equal(
    imageOf({ registryType: 'oci', identifier: 'localhost:5000/x', transport: t }),
    'localhost:5000/x',
  );
});

test('RemoteServer: remotes[0] gives url, transport and headers; the extension adds oauth_config and env_vars', () => {
  const server: CatalogServer = {
    name: 'com.acme/remote',
    description: 'Hosted',
    version: '1.0.0',
    remotes: [
      {
        type: 'sse',
        url: 'https://mcp.acme.com/sse',
        headers: [{ name: 'X-Region', description: 'region', choices: ['eu', 'us'], default: 'eu' }],
      },
    ],
    _meta: {
      [META]: {
        'io.github.stacklok': {
          'https://mcp.acme.com/sse': {
            tools: ['a'],
            oauth_config: { issuer: 'https://auth.acme.com', scopes: ['read'], use_pkce: true },
            env_vars: [{ name: 'TENANT', description: 'tenant', required: true }],
          },
        },
      },
    },
  };
  assert.deepEqual(toRemoteServer(server), {
    name: 'com.acme/remote',
    description: 'Hosted',
    tier: 'Community',
    status: 'active',
    transport: 'sse',
    tools: ['a'],
    url: 'https://mcp.acme.com/sse',
    headers: [
      { name: 'X-Region', description: 'region', required: false, default: 'eu', choices: ['eu', 'us'] },
    ],
    oauth_config: { issuer: 'https://auth.acme.com', scopes: ['read'], use_pkce: true },
    env_vars: [{ name: 'TENANT', description: 'tenant', required: true }],
  });
});

test('an entry without the extension still converts with neutral defaults', () => {
  const s = toImageServer({
    name: 'io.x/y',
    description: 'd',
    version: '1',
    packages: [{ registryType: 'oci', identifier: 'x/y', transport: { type: 'stdio' } }],
  });
  assert.deepEqual(s, {
    name: 'io.x/y',
    description: 'd',
    tier: 'Community',
    status: 'active',
    transport: 'stdio',
    tools: [],
    image: 'x/y',
  });
});
