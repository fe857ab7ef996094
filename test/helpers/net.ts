/** Socket helpers shared by integration tests and benches. */
import { createServer } from 'node:net';

/**
 * A TCP port on 127.0.0.1 that was free a moment ago: the OS picks it (port 0), we close the
 * listener and hand the number on. For processes that must be told their port up front (a child
 * server, a runner); anything that can listen on port 0 itself should do that instead.
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      if (address === null || typeof address === 'string') {
        srv.close();
        reject(new Error('listener has no TCP address'));
        return;
      }
      srv.close(() => resolve(address.port));
    });
  });
}
