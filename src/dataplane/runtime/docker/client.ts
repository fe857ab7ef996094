/**
 * Engine endpoints: a `DOCKER_HOST`-style address (`unix:///path`, `tcp://host:port`,
 * `http(s)://host:port`, `npipe:////./pipe/name`) becomes a dockerode client. Docker and
 * Podman's compatible service speak the same API, so nothing here is engine-specific.
 */
import { request as httpRequest } from 'node:http';
import type { Duplex } from 'node:stream';
import type Docker from 'dockerode';
import { definedOnly, lazyRequire, SkepError } from '../../../shared/index.js';

const loadDockerode = lazyRequire<typeof Docker>('dockerode');

export function dockerClient(host: string, timeoutMs?: number): Docker {
  const Docker = loadDockerode();
  const timeout = definedOnly({ timeout: timeoutMs });
  if (host.startsWith('unix://')) return new Docker({ socketPath: host.slice('unix://'.length), ...timeout });
  if (host.startsWith('npipe://'))
    return new Docker({ socketPath: host.slice('npipe://'.length), ...timeout });
  if (host.startsWith('/')) return new Docker({ socketPath: host, ...timeout });
  const match = /^(tcp|http|https):\/\/([^/:]+|\[[^\]]+\]):(\d+)\/?$/.exec(host);
  if (match === null) {
    throw new SkepError(
      'invalid_config',
      `container engine address '${host}' is not understood; use unix:///path/to/docker.sock or tcp://host:port`,
    );
  }
  const protocol = match[1] === 'https' ? 'https' : 'http';
  return new Docker({
    protocol,
    host: (match[2] as string).replace(/^\[|\]$/g, ''),
    port: Number(match[3]),
    ...timeout,
  });
}

/** True when the engine answers `/_ping` within `timeoutMs`. */
export async function pingEngine(host: string, timeoutMs = 2000): Promise<boolean> {
  let docker: Docker;
  try {
    docker = dockerClient(host, timeoutMs);
  } catch {
    return false;
  }
  try {
    const answer = await Promise.race([
      docker.ping(),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timeout')), timeoutMs).unref()),
    ]);
    return String(answer).trim() === 'OK';
  } catch {
    return false;
  }
}

/**
 * `POST /containers/{id}/attach` upgraded to a raw duplex stream (stdin in, multiplexed
 * frames out). Done by hand rather than through dockerode, which also sends its options as a
 * request body: Podman passes a hijacked request's body on to the container's stdin, where it
 * would corrupt the MCP byte stream. This request has no body at all.
 */
export function attachStdio(host: string, containerId: string, timeoutMs = 30_000): Promise<Duplex> {
  let target: { socketPath: string } | { host: string; port: number };
  if (host.startsWith('unix://')) target = { socketPath: host.slice('unix://'.length) };
  else if (host.startsWith('/')) target = { socketPath: host };
  else {
    const match = /^(?:tcp|http):\/\/([^/:]+|\[[^\]]+\]):(\d+)\/?$/.exec(host);
    if (match === null) {
      return Promise.reject(
        new SkepError(
          'invalid_config',
          `stdio servers need a unix:// or tcp:// engine address, not '${host}'`,
        ),
      );
    }
    target = { host: (match[1] as string).replace(/^\[|\]$/g, ''), port: Number(match[2]) };
  }
  return new Promise((resolve, reject) => {
    const req = httpRequest({
      ...target,
      method: 'POST',
      path: `/containers/${encodeURIComponent(containerId)}/attach?stream=1&stdin=1&stdout=1&stderr=1`,
      headers: { Connection: 'Upgrade', Upgrade: 'tcp', 'Content-Length': '0' },
      timeout: timeoutMs,
    });
    req.on('upgrade', (_res, socket, head) => {
      socket.setTimeout(0);
      if (head.length > 0) socket.unshift(head);
      resolve(socket);
    });
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        body += d;
      });
      res.on('end', () =>
        reject(new Error(`attach to ${containerId} answered ${res.statusCode}: ${body.trim()}`)),
      );
    });
    req.on('timeout', () => req.destroy(new Error('attach timed out')));
    req.on('error', reject);
    req.end();
  });
}
