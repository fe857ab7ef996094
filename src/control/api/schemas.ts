/** Response helpers shared by every route module (the bodies are in `src/schemas/api/`). */
import type { TSchema } from 'typebox';
import { ErrorBody } from '../../schemas/index.js';

/** Adds the error body to the listed statuses of a route's response map. */
export function withErrors<R extends Record<number, TSchema>>(
  responses: R,
  ...statuses: number[]
): R & Record<number, TSchema> {
  const out: Record<number, TSchema> = { ...responses };
  for (const status of statuses) out[status] = ErrorBody;
  return out as R & Record<number, TSchema>;
}
