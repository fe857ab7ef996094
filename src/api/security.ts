/**
 * The management API's browser guard, as a Fastify hook over the shared origin guard
 * (`src/shared/origin-guard.ts`): Host names against DNS rebinding, and an `Origin` only
 * when it is exactly the API's own or one the user configured. Requests over the unix
 * socket cannot come from a browser and pass.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { createOriginGuard, type OriginGuardOptions } from '../shared/index.js';
import { sendError } from './errors.js';

export function createHostGuard(options: OriginGuardOptions) {
  const guard = createOriginGuard(options);
  return async function hostGuard(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    // Unix-socket peers have no remote address; browsers cannot reach them.
    if (request.socket.remoteAddress === undefined) return;
    const denied = guard(request.headers);
    if (denied !== undefined) await sendError(reply, 403, 'forbidden_host', denied);
  };
}
