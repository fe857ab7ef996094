/** Real loopback HTTP servers that play registry sources in the integration tests. */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, type Socket } from 'node:net';
import type { TestContext } from 'node:test';

export interface LoopbackServer {
  port: number;
  url: string;
  /** Every request seen: method, url and the If-None-Match header. */
  requests: { method: string; url: string; ifNoneMatch: string | undefined }[];
  /** TCP connections accepted (a refused source must open none). */
  connections(): number;
  close(): Promise<void>;
}

export async function httpServer(
  t: TestContext,
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<LoopbackServer> {
  const requests: LoopbackServer['requests'] = [];
  const server = createServer((req, res) => {
    requests.push({
      method: req.method ?? '',
      url: req.url ?? '',
      ifNoneMatch: req.headers['if-none-match'],
    });
    handler(req, res);
  });
  let connections = 0;
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  t.after(close);
  return { port, url: `http://127.0.0.1:${port}`, requests, connections: () => connections, close };
}

/** A TCP server that accepts connections and never answers. */
export async function silentServer(t: TestContext): Promise<{ port: number }> {
  const sockets = new Set<Socket>();
  const server = createTcpServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { port: (server.address() as { port: number }).port };
}

/** A port with nothing listening on it (bound, then released). */
export async function closedPort(): Promise<number> {
  const server = createTcpServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
