/**
 * A path-stripping relay on 127.0.0.1 port 0, as an ingress that serves a workload under a path
 * prefix does: `<relay>/<prefix>/x` is forwarded to `<target>/x` (streaming both ways, so SSE
 * streams pass), and any path outside the prefix is a 404. `headers` are set on every forwarded
 * request as the ingress's own (`X-Forwarded-Prefix`, ...), read per request so a test may change
 * them. Closed when the test ends.
 */
import { createServer, request } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { TestContext } from 'node:test';

export interface PathRelay {
  /** `http://127.0.0.1:<port><prefix>`: the workload's root as clients of the relay see it. */
  url: string;
  /** Paths the relay received, in order (before stripping). */
  paths: string[];
}

export async function startPathRelay(
  t: TestContext,
  prefix: string,
  target: string,
  headers: Record<string, string> = {},
): Promise<PathRelay> {
  const upstream = new URL(target);
  const paths: string[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    const path = req.url ?? '/';
    paths.push(path);
    if (!path.startsWith(`${prefix}/`)) {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not under the prefix');
      return;
    }
    const out = request(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: path.slice(prefix.length),
        headers: { ...req.headers, ...headers, host: upstream.host },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    out.on('error', () => res.destroy());
    req.pipe(out);
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(async () => {
    // SSE streams stay open: end their connections so close() resolves.
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}${prefix}`, paths };
}
