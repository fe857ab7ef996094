/**
 * Engine endpoints: a `DOCKER_HOST`-style address (`unix:///path`, `tcp://host:port`,
 * `http(s)://host:port`, `npipe:////./pipe/name`) becomes a dockerode client. Docker and
 * Podman's compatible service speak the same API, so nothing here is engine-specific.
 */
import Docker from 'dockerode';
import { SkepError } from '../../shared/index.js';

export function dockerClient(host: string, timeoutMs?: number): Docker {
  const timeout = timeoutMs === undefined ? {} : { timeout: timeoutMs };
  if (host.startsWith('unix://')) return new Docker({ socketPath: host.slice('unix://'.length), ...timeout });
  if (host.startsWith('npipe://')) return new Docker({ socketPath: host.slice('npipe://'.length), ...timeout });
  if (host.startsWith('/')) return new Docker({ socketPath: host, ...timeout });
  const match = /^(tcp|http|https):\/\/([^/:]+|\[[^\]]+\]):(\d+)\/?$/.exec(host);
  if (match === null) {
    throw new SkepError(
      'bad_request',
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
