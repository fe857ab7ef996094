/**
 * `header-forward`: fixed headers on every request to a remote server (`header_forward`):
 * `add_plaintext_headers` as written, `add_headers_from_secret` read from the secrets provider
 * once at start (never logged or exported). A secret's value wins over a plaintext value for
 * the same header.
 */
import { SkepError } from '../../../shared/index.js';
import type { StageFactory } from '../types.js';
import { paramsObject } from './params.js';
import { requireSecret, secretName } from './secrets.js';

const TYPE = 'header-forward';

function stringMap(params: Record<string, unknown>, key: string): Record<string, string> {
  const v = params[key];
  if (v === undefined || v === null) return {};
  if (typeof v !== 'object' || Array.isArray(v) || Object.values(v).some((x) => typeof x !== 'string'))
    throw new SkepError(
      'invalid_config',
      `middleware_configs: '${TYPE}' parameter '${key}' must map names to strings`,
    );
  return v as Record<string, string>;
}

export const headerForwardStage: StageFactory = {
  type: TYPE,
  fromRunConfig(config) {
    const hf = config.header_forward;
    const plain = hf?.add_plaintext_headers ?? {};
    const secret = hf?.add_headers_from_secret ?? {};
    if (Object.keys(plain).length === 0 && Object.keys(secret).length === 0) return undefined;
    return { add_headers: plain, add_headers_from_secret: secret };
  },
  async create(parameters, deps) {
    const params = paramsObject(TYPE, parameters);
    const headers: Record<string, string> = { ...stringMap(params, 'add_headers') };
    for (const [header, ref] of Object.entries(stringMap(params, 'add_headers_from_secret'))) {
      const field = `header_forward.add_headers_from_secret.${header}`;
      headers[header] = await requireSecret(secretName(ref), deps.secretLookup, field);
    }
    if (Object.keys(headers).length === 0) return undefined;
    const { createStaticHeadersMiddleware } = await import('../../middleware/auth/static-headers.js');
    return createStaticHeadersMiddleware('header-forward', headers, 'header_forward');
  },
};
