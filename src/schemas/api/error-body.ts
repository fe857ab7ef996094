/** The error body every failed API request answers with, and the empty (202/204) body. */
import { Type } from 'typebox';
import { ERROR_CODES } from '../../shared/index.js';

/** The `$id` of the error body, its name among the OpenAPI document's components. */
export const ERROR_SCHEMA = 'Error';

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

/** Empty response (202/204). */
export const NoContent = Type.Null({ description: 'No content.' });
