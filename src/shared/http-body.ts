/**
 * Reading a request body under a size limit, for every HTTP surface Skep serves without a
 * framework (workload proxy, operator webhook, embedded authorization server). A declared
 * `Content-Length` over the limit is refused before any byte is read; a body that grows past
 * it is refused as soon as it does, and the rest is drained so the connection stays usable.
 */
import type { IncomingMessage } from 'node:http';

/** The body is larger than the limit; each surface maps it to its own 413 (or 400) shape. */
export class BodyTooLargeError extends Error {
  override readonly name = 'BodyTooLargeError';
  constructor(readonly limit: number) {
    super('request body too large');
  }
}

/** Reads a request body as UTF-8, refusing more than `limit` bytes. */
export function readBody(req: IncomingMessage, limit: number): Promise<string> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) {
    req.resume();
    return Promise.reject(new BodyTooLargeError(limit));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        chunks.length = 0;
        req.removeAllListeners('data');
        req.resume();
        reject(new BodyTooLargeError(limit));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (size <= limit)
        resolve(chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8'));
    });
    req.on('error', reject);
  });
}
