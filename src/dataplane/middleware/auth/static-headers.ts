/**
 * Middlewares that add fixed headers to requests for the remote server:
 * - `header-forward`: `header_forward.add_plaintext_headers`, values from the configuration;
 * - `header-injection`: `header_forward.add_headers_from_secret` (ToolHive's headerInjection),
 *   values read from the secrets provider once at start and never logged or exported;
 * - `bearer-token`: `remote_auth_config.bearer_token[_file]` as `Authorization: Bearer`.
 * Names are checked at build time against the headers the transport and proxy own. The
 * headers are also published (`staticHeaders`) for the runner's reachability probe of a
 * remote server, so the probe and the proxied requests carry the same ones.
 */
import type { ProxyMiddleware } from '../../proxy/index.js';
import { checkHeaderValue, checkInjectableHeader } from './http.js';

export function createStaticHeadersMiddleware(
  name: 'header-forward' | 'header-injection' | 'bearer-token',
  headers: Record<string, string>,
  field: string,
): ProxyMiddleware & { readonly staticHeaders: Readonly<Record<string, string>> } {
  const lower: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) {
    checkHeaderValue(v, `${field}.${k}`);
    lower[checkInjectableHeader(k, field)] = v;
  }
  const entries = Object.entries(lower);
  return {
    name,
    staticHeaders: Object.freeze(Object.assign({}, lower)),
    async handle(ctx) {
      for (const [k, v] of entries) ctx.outboundHeaders[k] = v;
      return undefined;
    },
  };
}
