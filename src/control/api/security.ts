/**
 * The management API's browser guard, as a Fastify hook over the shared origin guard
 * (`src/shared/origin-guard.ts`): Host names against DNS rebinding, and an `Origin` only
 * when it is exactly the API's own or one the user configured. The app installs it on TCP
 * only: a unix socket cannot be reached from a browser. (Which listener a request came in on
 * is decided when the app is built, not from the peer address, which a closed TCP socket
 * also lacks.)
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { createOriginGuard, type OriginGuardOptions } from '../../shared/index.js';
import { sendError } from './errors.js';

export function createHostGuard(options: OriginGuardOptions) {
  const guard = createOriginGuard(options);
  return async function hostGuard(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const denied = guard(request.headers);
    if (denied !== undefined) await sendError(reply, 403, 'forbidden_host', denied);
  };
}
