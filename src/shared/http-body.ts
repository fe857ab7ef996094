/**
 * Reading a request body under a size limit, for every HTTP surface Skep serves without a
 * framework (workload proxy, operator webhook, embedded authorization server). A declared
 * `Content-Length` over the limit is refused before any byte is read; a body that grows past
 * it is refused as soon as it does, and the rest is drained so the connection stays usable.
 * The capped read itself (`readTextUpTo`) also serves bodies Skep receives (webhook answers).
 */
import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import type { ErrorCode } from './errors.js';
import type { BodyBudget } from './listener-limits.js';

/** The body is larger than the limit; each surface maps it to its own 413 (or 400) shape. */
export class BodyTooLargeError extends Error {
  override readonly name = 'BodyTooLargeError';
  readonly code: ErrorCode = 'payload_too_large';
  constructor(readonly limit: number) {
    super('request body too large');
  }
}

/**
 * Reads a request body as UTF-8, refusing more than `limit` bytes. With the listener's
 * `budget`, the body's unfinished bytes count against it, and the read fails (its connection
 * closed) when the budget gives it up.
 */
export function readBody(req: IncomingMessage, limit: number, budget?: BodyBudget): Promise<string> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) {
    req.resume();
    return Promise.reject(new BodyTooLargeError(limit));
  }
  // Past the limit the rest is drained, so the connection stays usable for the answer.
  const read = readTextUpTo(req, limit, () => req.resume()).then((text) => {
    if (text === undefined) throw new BodyTooLargeError(limit);
    return text;
  });
  if (budget === undefined) return read;
  const pending = budget.start(req);
  const count = (chunk: Buffer) => {
    if (budget.grow(pending, chunk.length)) return;
    req.off('data', count);
    req.socket.destroy();
  };
  req.on('data', count);
  return read.finally(() => {
    req.off('data', count);
    budget.end(pending);
  });
}

/**
 * Reads `stream` to its end as UTF-8; `undefined` once more than `limit` bytes arrived: then
 * it stops collecting and calls `overflow` (which drains or destroys the stream). Read with
 * listeners: an async iterator over the stream costs tens of µs per call on Node 20.
 */
export function readTextUpTo(
  stream: Readable,
  limit: number,
  overflow: () => void,
): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let ended = false;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        chunks.length = 0;
        stream.off('data', onData);
        overflow();
        resolve(undefined);
        return;
      }
      chunks.push(chunk);
    };
    stream.on('data', onData);
    stream.on('end', () => {
      ended = true;
      if (size <= limit)
        resolve(chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8'));
    });
    // A connection destroyed mid-body may close the stream without an error event. What was
    // collected is let go at once, not when the promise's callers are done with it.
    const fail = (err: Error) => {
      chunks.length = 0;
      reject(err);
    };
    stream.on('error', fail);
    stream.on('close', () => {
      if (!ended) fail(new Error('the body ended before it was complete'));
    });
  });
}
