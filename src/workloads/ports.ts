/** Proxy port checks and allocation inside the configured range. */
import { createServer } from 'node:net';

/** True when a TCP listener can bind `host:port` right now. */
export function portFree(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen({ port, host, exclusive: true }, () => {
      server.close(() => resolve(true));
    });
  });
}

/**
 * Picks a free port in `[start, end]` that is not in `taken`, starting at a random offset
 * so concurrent allocations rarely collide (the store's unique index settles the rest).
 */
export async function allocatePort(
  start: number,
  end: number,
  taken: ReadonlySet<number>,
  host = '127.0.0.1',
): Promise<number | undefined> {
  const size = end - start + 1;
  if (size <= 0) return undefined;
  const offset = Math.floor(Math.random() * size);
  for (let i = 0; i < size; i++) {
    const port = start + ((offset + i) % size);
    if (taken.has(port)) continue;
    if (await portFree(port, host)) return port;
  }
  return undefined;
}
