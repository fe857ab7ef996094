/**
 * The authorizer configuration (`authz_config`, the file `authz_config_path` names) in
 * ToolHive's two shapes, one schema each: `cedarv1` (Cedar policies evaluated in the proxy)
 * and `httpv1` (an external decision point). `version` and `type` pick the schema; they are
 * checked in `src/dataplane/middleware/authz/config.ts`, with the rules a schema cannot state (each Cedar policy
 * and the static entities compile, the group entity type is a Cedar identifier, the decision
 * point's URL). Unknown keys are refused at every level. `x-errors` words the messages.
 */
import { Type } from 'typebox';
import { Opt } from './shorthand.js';

const UNKNOWN_KEYS = ': unknown key{s} {keysQuoted} (allowed: {known})';
const closed = { additionalProperties: false, 'x-errors': { additionalProperties: UNKNOWN_KEYS } };
const str = () => Type.String({ 'x-errors': { type: 'must be a string', required: 'must be a string' } });
const bool = () => Type.Boolean({ 'x-errors': { type: 'must be true or false' } });
const strings = (extra: Record<string, unknown> = {}) =>
  Type.Array(Type.String({ 'x-error-at': 'list', 'x-errors': { type: 'must be an array of strings' } }), {
    ...extra,
    'x-errors': { type: 'must be an array of strings', ...(extra['x-errors'] as object) },
  });
const header = { version: Type.String(), type: Type.String() };

export const CedarAuthzConfigSchema = Type.Object(
  {
    ...header,
    cedar: Type.Object(
      {
        policies: strings({
          minItems: 1,
          'x-errors': {
            required: ': at least one policy is required',
            minItems: ': at least one policy is required',
          },
        }),
        entities_json: Opt(str()),
        primary_upstream_provider: Opt(str()),
        group_claim_name: Opt(str()),
        role_claim_name: Opt(str()),
        group_entity_type: Opt(str()),
        multi_valued_claims: Opt(strings()),
      },
      {
        ...closed,
        'x-errors': {
          ...closed['x-errors'],
          required: 'must be an object',
          type: 'must be an object',
        },
      },
    ),
  },
  closed,
);

const CLAIM_MAPPING = 'is required: "mpe" or "standard"';

export const HttpAuthzConfigSchema = Type.Object(
  {
    ...header,
    pdp: Type.Object(
      {
        http: Type.Object(
          {
            url: str(),
            // ToolHive reads 0 (and absence) as the default; fractions are accepted.
            timeout: Opt(
              Type.Number({
                minimum: 0,
                'x-errors': {
                  type: 'must be a number of seconds (0 or absent: 30)',
                  minimum: 'must be a number of seconds (0 or absent: 30)',
                },
              }),
            ),
            insecure_skip_verify: Opt(bool()),
          },
          {
            ...closed,
            'x-errors': { ...closed['x-errors'], required: 'must be an object', type: 'must be an object' },
          },
        ),
        claim_mapping: Type.Unsafe<'mpe' | 'standard'>({
          enum: ['mpe', 'standard'],
          'x-errors': { required: CLAIM_MAPPING, enum: CLAIM_MAPPING },
        }),
        context: Opt(Type.Object({ include_args: Opt(bool()), include_operation: Opt(bool()) }, closed)),
      },
      {
        ...closed,
        'x-errors': { ...closed['x-errors'], required: 'must be an object', type: 'must be an object' },
      },
    ),
  },
  closed,
);
