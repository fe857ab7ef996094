/**
 * The audit configuration (`audit_config`, or the JSON file named by `audit_config_path`):
 * ToolHive's camelCase keys. Unknown keys are refused (a typo such as `excludeEventType` would
 * otherwise silently audit everything); `logFile` is an absolute path. `x-errors` words the
 * messages (see `validators/format.ts`); `src/dataplane/middleware/audit/config.ts` applies the defaults.
 * The run configuration's `audit_config` is this schema.
 */
import { Type } from 'typebox';
import { AUDIT_EVENT_TYPE_NAMES } from './audit-event-types.js';
import { Opt } from './shorthand.js';

const bool = () => Type.Boolean({ 'x-errors': { type: 'must be true or false' } });
const str = (extra: Record<string, unknown> = {}) =>
  Type.String({ ...extra, 'x-errors': { type: 'must be a string', ...(extra['x-errors'] as object) } });
const UNKNOWN_TYPE = `: unknown event type {json}; known types: ${AUDIT_EVENT_TYPE_NAMES.join(', ')}`;

/**
 * A filter's list. Embedded by value, not by `$id` reference, as the run configuration embeds
 * this schema; scripts/gen-validators.mjs still compiles it into one function for both filters.
 */
export const AuditEventTypesSchema = Type.Array(
  Type.String({
    enum: [...AUDIT_EVENT_TYPE_NAMES],
    'x-error-at': 'list',
    'x-errors': { type: UNKNOWN_TYPE, enum: UNKNOWN_TYPE },
  }),
  { 'x-errors': { type: 'must be a list of event types' } },
);

export const AuditConfigSchema = Type.Object(
  {
    enabled: Opt(bool()),
    component: Opt(str()),
    eventTypes: Opt(AuditEventTypesSchema),
    excludeEventTypes: Opt(AuditEventTypesSchema),
    includeRequestData: Opt(bool()),
    includeResponseData: Opt(bool()),
    detectApplicationErrors: Opt(bool()),
    maxDataSize: Opt(
      Type.Integer({
        minimum: 0,
        'x-errors': { type: 'must be an integer', minimum: 'must not be negative (bytes; 0 means 1024)' },
      }),
    ),
    maxDelegationDepth: Opt(
      Type.Integer({
        minimum: 1,
        'x-errors': { type: 'must be an integer', minimum: 'must be a positive integer' },
      }),
    ),
    // Empty: no file (the runner's log). The runner's working directory is nobody's business.
    logFile: Opt(
      str({ pattern: '^(/|$)', 'x-errors': { pattern: 'must be an absolute path (got {json})' } }),
    ),
  },
  {
    additionalProperties: false,
    'x-errors': {
      type: 'must be a JSON object',
      additionalProperties: ': unknown key{s} {keysJson}; known keys (camelCase): {known}',
    },
  },
);
