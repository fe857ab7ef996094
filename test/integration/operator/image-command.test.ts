// A stdio MCPServer without `spec.command`: the operator's render reads the image's entrypoint
// and cmd from a real OCI registry (Debian's docker-registry) — through an image index, as
// multi-platform images are published — pins the pod to the digest it read, caches by digest,
// and `skep operator render --offline` names the image that needs a command instead.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { createImageCommandReader } from '../../../src/control/operator/image-command.js';
import { type K8sObject, renderResources } from '../../../src/control/operator/render.js';
import {
  MEDIA_CONFIG,
  MEDIA_INDEX,
  MEDIA_LAYER,
  MEDIA_MANIFEST,
  OciSession,
  sha256Digest,
} from '../../../src/skills/oci-client.js';
import { parseOciRef } from '../../../src/skills/oci-ref.js';
import { requireService } from '../../helpers/services.js';
import { hasRegistry, startRegistry, tempDir } from '../skills/fixtures.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));

/** Pushes an image whose configuration names `entrypoint` and `cmd`, behind an image index. */
async function pushImage(
  host: string,
  entrypoint: string[],
  cmd: string[],
): Promise<{ image: string; indexDigest: string }> {
  const image = `${host}/mcp/echo:1`;
  const session = new OciSession(parseOciRef(image), true, { privateHosts: [host] });
  const config = Buffer.from(
    JSON.stringify({
      architecture: 'amd64',
      os: 'linux',
      config: { Entrypoint: entrypoint, Cmd: cmd, Env: ['PATH=/usr/bin:/bin'] },
      rootfs: { type: 'layers', diff_ids: [] },
    }),
  );
  const layer = Buffer.from('not a real layer: only its digest is read');
  for (const blob of [config, layer]) await session.putBlob(blob, sha256Digest(blob));
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: MEDIA_MANIFEST,
      config: { mediaType: MEDIA_CONFIG, digest: sha256Digest(config), size: config.length },
      layers: [{ mediaType: MEDIA_LAYER, digest: sha256Digest(layer), size: layer.length }],
    }),
  );
  await session.putManifest(sha256Digest(manifest), manifest, MEDIA_MANIFEST);
  const index = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: MEDIA_INDEX,
      manifests: [
        {
          mediaType: MEDIA_MANIFEST,
          digest: sha256Digest(manifest),
          size: manifest.length,
          platform: { os: 'linux', architecture: 'amd64' },
        },
      ],
    }),
  );
  await session.putManifest('1', index, MEDIA_INDEX);
  return { image, indexDigest: sha256Digest(index) };
}

const stdioServer = (image: string, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'skep.dev/v1beta1',
  kind: 'MCPServer',
  metadata: { name: 'echo' },
  spec: { image, transport: 'stdio', ...extra },
});

type Pod = { containers: Array<{ name: string; image: string }> };
const podOf = (objects: K8sObject[]) =>
  (objects.find((o) => o.kind === 'Deployment')!['spec'] as { template: { spec: Pod } }).template.spec;
const runConfigOf = (objects: K8sObject[]) =>
  JSON.parse(
    (objects.find((o) => o.kind === 'ConfigMap')!['data'] as Record<string, string>)['runconfig.json']!,
  ) as { image: string; cmd_args: string[] };

async function registry(t: TestContext): Promise<string | undefined> {
  if (!requireService(t, 'docker-registry', hasRegistry(), 'apt-get install docker-registry'))
    return undefined;
  return startRegistry(t);
}

describe('stdio MCPServer without spec.command', { timeout: 120_000 }, () => {
  it("runs the image's entrypoint and cmd, pinned to the digest read from the registry", async (t) => {
    const host = await registry(t);
    if (host === undefined) return;
    const { image, indexDigest } = await pushImage(host, ['/usr/bin/echo-server'], ['--stdio']);
    let requests = 0;
    const countingFetch: typeof fetch = (input, init) => {
      requests++;
      return fetch(input, init);
    };
    const read = createImageCommandReader({ fetch: countingFetch });
    const { objects, problems } = await renderResources([stdioServer(image)], {
      runnerImage: 'skep:test',
      readImageCommand: read,
    });
    assert.deepEqual(problems, []);
    assert.equal(podOf(objects).containers[0]!.image, `${host}/mcp/echo@${indexDigest}`);
    const rc = runConfigOf(objects);
    assert.equal(rc.image, 'cmd:///usr/bin/echo-server');
    assert.deepEqual(rc.cmd_args, ['--stdio']);
    // spec.args replaces the image's cmd and follows its entrypoint, as in a container.
    const withArgs = await renderResources([stdioServer(image, { args: ['--verbose'] })], {
      readImageCommand: read,
    });
    assert.deepEqual(runConfigOf(withArgs.objects).cmd_args, ['--verbose']);
    // A reference pinned to a digest that was read is answered from the cache: no request.
    const before = requests;
    const again = await read(`${host}/mcp/echo@${indexDigest}`);
    assert.equal(requests, before);
    assert.deepEqual(again, {
      pinned: `${host}/mcp/echo@${indexDigest}`,
      digest: indexDigest,
      entrypoint: ['/usr/bin/echo-server'],
      cmd: ['--stdio'],
    });
    // spec.command stays the explicit override: no registry read, the image is left as written.
    const explicit = await renderResources([stdioServer(image, { command: ['/bin/other'] })], {
      readImageCommand: () => Promise.reject(new Error('must not be called')),
    });
    assert.deepEqual(explicit.problems, []);
    assert.equal(podOf(explicit.objects).containers[0]!.image, image);
  });

  it('an image that cannot be read, or offline, is a problem naming the image', async (t) => {
    const host = await registry(t);
    if (host === undefined) return;
    const missing = `${host}/mcp/absent:1`;
    const unread = await renderResources([stdioServer(missing)], {
      readImageCommand: createImageCommandReader(),
    });
    assert.equal(unread.objects.length, 0);
    assert.equal(unread.problems.length, 1);
    assert.match(
      unread.problems[0]!.problem,
      new RegExp(
        `^spec\\.command: cannot read the entrypoint of image ${missing} \\(.+\\); set spec\\.command$`,
      ),
    );
    const { image } = await pushImage(host, [], []);
    const empty = await renderResources([stdioServer(image)], {
      readImageCommand: createImageCommandReader(),
    });
    assert.deepEqual(
      empty.problems.map((p) => p.problem),
      [`spec.command: image ${image} has no entrypoint or cmd; set spec.command`],
    );

    const dir = tempDir(t, 'skep-offline-');
    const file = join(dir, 'server.yaml');
    writeFileSync(file, stringify(stdioServer(image)));
    const r = spawnSync(
      process.execPath,
      [
        '--import',
        'tsx',
        join(root, 'src/control/cli/main.ts'),
        'operator',
        'render',
        '--offline',
        '-f',
        file,
      ],
      {
        cwd: root,
        encoding: 'utf8',
        timeout: 60_000,
        env: { ...process.env, SKEP_HOME: mkdtempSync(join(tmpdir(), 'skep-cli-')) },
      },
    );
    assert.equal(r.status, 1, r.stdout);
    assert.match(
      r.stderr,
      new RegExp(
        `MCPServer/default/echo: spec\\.command: image ${image} needs a command: its entrypoint is not read offline`,
      ),
    );
  });
});
