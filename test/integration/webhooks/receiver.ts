/**
 * A webhook receiver on 127.0.0.1 port 0, over HTTP or HTTPS, standing in for a policy
 * service: it records every call (the parsed envelope and its headers), verifies the HMAC
 * signature itself when it knows the key (as a real receiver would: recompute over
 * "<timestamp>." + the exact body bytes, compare in constant time), and answers with what
 * the test's `respond` says. Closed when the test ends.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type ServerOptions } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TestContext } from 'node:test';

export interface ReceivedCall {
  /** The request envelope (ToolHive's), parsed. */
  body: Record<string, unknown> & {
    mcp_request: Record<string, unknown> & { params?: Record<string, unknown> };
    principal: Record<string, unknown> | null;
    context: Record<string, unknown>;
  };
  /** The exact bytes received, as text. */
  raw: string;
  headers: IncomingMessage['headers'];
  /** Undefined when the receiver has no key; else whether the signature matched. */
  signatureValid: boolean | undefined;
}

/** What to answer: a status and a JSON value (or a raw string), or hang until the test ends. */
export type Answer = { status: number; json?: unknown; text?: string } | 'hang';

export interface ReceiverOptions {
  /** Serve HTTPS (TLS 1.2 or later) with these options (PEM `cert` and `key`, ...). */
  tls?: ServerOptions;
  /** The shared HMAC key; a function is read on every call (rotation). */
  key?: Buffer | (() => Buffer);
  respond: (call: ReceivedCall) => Answer;
}

export interface Receiver {
  url: string;
  calls: ReceivedCall[];
}

function verify(key: Buffer, req: IncomingMessage, raw: Buffer): boolean {
  const timestamp = req.headers['x-toolhive-timestamp'];
  const signature = req.headers['x-toolhive-signature'];
  if (typeof timestamp !== 'string' || typeof signature !== 'string') return false;
  // A receiver also bounds the clock skew it accepts, so a captured call cannot be replayed later.
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > 300) return false;
  const expected = Buffer.from(
    `sha256=${createHmac('sha256', key).update(`${timestamp}.`).update(raw).digest('hex')}`,
  );
  const given = Buffer.from(signature);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

export async function startReceiver(t: TestContext, options: ReceiverOptions): Promise<Receiver> {
  const calls: ReceivedCall[] = [];
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const key = typeof options.key === 'function' ? options.key() : options.key;
      const call: ReceivedCall = {
        body: JSON.parse(raw.toString('utf8')) as ReceivedCall['body'],
        raw: raw.toString('utf8'),
        headers: req.headers,
        signatureValid: key === undefined ? undefined : verify(key, req, raw),
      };
      calls.push(call);
      const answer = options.respond(call);
      if (answer === 'hang') return;
      const text = answer.text ?? (answer.json === undefined ? '' : JSON.stringify(answer.json));
      res.writeHead(answer.status, { 'content-type': 'application/json' });
      res.end(text);
    });
  };
  const server =
    options.tls === undefined
      ? createHttpServer(handler)
      : createHttpsServer({ ...options.tls, minVersion: 'TLSv1.2' }, handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  const scheme = options.tls === undefined ? 'http' : 'https';
  return { url: `${scheme}://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, calls };
}

/** The usual answers. */
export const ALLOW: Answer = { status: 200, json: { version: 'v0.1.0', allowed: true } };
export const DENY: Answer = {
  status: 200,
  json: { version: 'v0.1.0', allowed: false, reason: 'PolicyDenied', message: 'internal policy detail' },
};
