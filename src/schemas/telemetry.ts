/**
 * `telemetry_config` (ToolHive's shape, camelCase keys): what each field may hold. ToolHive's
 * JSON writes an absent field as null, so every field also takes null. The rules JSON Schema
 * cannot state (the endpoint's URL and its scheme against `insecure`, the sampling rate written
 * as a decimal string, a destination for what is configured, the CA file) are in
 * `src/dataplane/middleware/telemetry/config.ts`. `x-errors` words the messages (see `validators/format.ts`).
 * The run configuration's `telemetry_config` is this schema.
 */
import { Type } from 'typebox';
import { Opt } from './shorthand.js';

const KNOWN_KEYS = [
  'endpoint',
  'serviceName',
  'serviceVersion',
  'tracingEnabled',
  'metricsEnabled',
  'samplingRate',
  'headers',
  'insecure',
  'caCertPath',
  'enablePrometheusMetricsPath',
  'environmentVariables',
  'customAttributes',
  'useLegacyAttributes',
];

const orNull = (type: string, message: string, extra: Record<string, unknown> = {}) =>
  Type.Unsafe({ type: [type, 'null'], ...extra, 'x-errors': { type: message } });
const str = () => orNull('string', 'must be a string');
const bool = () => orNull('boolean', 'must be true or false');
/** A map of strings; `names` and `values` add to the checks of its names and values. */
const stringMap = (names: Record<string, unknown> = {}, values: Record<string, unknown> = {}) =>
  orNull('object', 'must be an object of strings', {
    propertyNames: {
      minLength: 1,
      ...names,
      'x-errors': { minLength: 'has an empty name', ...(names['x-errors'] as object) },
    },
    additionalProperties: {
      type: 'string',
      ...values,
      'x-errors': { type: 'must be a string', ...(values['x-errors'] as object) },
    },
  });

export const TelemetryConfigSchema = Type.Object(
  {
    endpoint: Opt(str()),
    serviceName: Opt(str()),
    serviceVersion: Opt(str()),
    tracingEnabled: Opt(bool()),
    metricsEnabled: Opt(bool()),
    // A decimal string (ToolHive's type) or a number; its value is read in telemetry/config.ts.
    samplingRate: Opt(Type.Unknown()),
    headers: Opt(
      stringMap(
        // RFC 9110 §5.1: a field name is a token.
        {
          pattern: "^[!#$%&'*+\\-.^_`|~0-9A-Za-z]+$",
          'x-errors': { pattern: "has an invalid header name '{name}'" },
        },
        { pattern: '^[^\\r\\n\\0]*$', 'x-errors': { pattern: 'must not contain line breaks' } },
      ),
    ),
    insecure: Opt(bool()),
    caCertPath: Opt(str()),
    enablePrometheusMetricsPath: Opt(bool()),
    environmentVariables: Opt(
      orNull('array', 'must be a list of environment variable names', {
        items: {
          type: 'string',
          // The name is read trimmed.
          pattern: '^\\s*[A-Za-z_][A-Za-z0-9_]*\\s*$',
          'x-error-at': 'list',
          'x-errors': {
            type: 'must be a list of environment variable names',
            pattern: "has an invalid variable name '{value}'",
          },
        },
      }),
    ),
    customAttributes: Opt(stringMap()),
    useLegacyAttributes: Opt(bool()),
    // Newer reference fields, accepted at their defaults only.
    prometheusPort: Opt(
      Type.Unsafe({
        enum: [0, null],
        'x-errors': {
          enum: 'is not supported: Skep serves /metrics on the workload’s own proxy port (many workloads share one machine, so no fixed port); remove it',
        },
      }),
    ),
    metricsOnTransportPort: Opt(
      Type.Unsafe({
        not: { const: false },
        'x-errors': { not: 'is not supported: Skep serves /metrics only on the proxy port; remove it' },
      }),
    ),
  },
  {
    additionalProperties: false,
    'x-errors': { additionalProperties: `: unknown key(s) {keys} (known: ${KNOWN_KEYS.join(', ')})` },
  },
);
