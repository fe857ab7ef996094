/** Schemas shared by every route module: the error body and common response helpers. */
import { type TSchema, Type } from 'typebox';
import { ERROR_CODES } from '../shared/index.js';
import { ERROR_SCHEMA } from './openapi.js';

const codeTable = Object.entries(ERROR_CODES)
  .map(([code, { status, description }]) => `| \`${code}\` | ${status} | ${description} |`)
  .join('\n');

export const ErrorBody = Type.Object(
  {
    code: Type.String({ description: 'Stable machine-readable error code.' }),
    message: Type.String({ description: 'What went wrong and, for 4xx, what to fix.' }),
  },
  {
    $id: ERROR_SCHEMA,
    // Some errors add fields (registry_auth_required: auth_status, auth_type, auth_config).
    additionalProperties: true,
    description: `Error body of every failed request.\n\n| code | status | meaning |\n|---|---|---|\n${codeTable}`,
  },
);

/** Adds the error body to the listed statuses of a route's response map. */
export function withErrors<R extends Record<number, TSchema>>(
  responses: R,
  ...statuses: number[]
): R & Record<number, TSchema> {
  const out: Record<number, TSchema> = { ...responses };
  for (const status of statuses) out[status] = ErrorBody;
  return out as R & Record<number, TSchema>;
}

/** Empty response (202/204). */
export const NoContent = Type.Null({ description: 'No content.' });
