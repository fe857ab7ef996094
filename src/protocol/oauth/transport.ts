/**
 * How the OAuth client's requests leave the process: every request oauth4webapi builds goes
 * through the caller's `fetch` (the address-policy-checked one from `shared/`), bounded in
 * time and in the size of the answer read. Redirects are followed by that `fetch`, which
 * checks every hop against the same policy, as the client did before it used oauth4webapi;
 * oauth4webapi's own `redirect: 'manual'` would turn a redirecting endpoint into an error.
 */
import * as oauth from 'oauth4webapi';

export type FetchLike = typeof fetch;

/** Largest token-endpoint or metadata response read, bytes. */
export const MAX_RESPONSE_BYTES = 1024 * 1024;
/** Every outgoing call is bounded: a stalled endpoint must not hang a request. */
export const REQUEST_TIMEOUT_MS = 30_000;

/** The MCP protocol version discovery requests announce (MCP 2025-06-18 "Authorization"). */
export const MCP_PROTOCOL_VERSION = '2025-06-18';

/** Options for every oauth4webapi request of one client. */
export type RequestOptions = oauth.DiscoveryRequestOptions &
  oauth.TokenEndpointRequestOptions &
  oauth.DynamicClientRegistrationRequestOptions;

/** Statuses whose response has no body (Fetch standard "null body status"). */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/** Reads a response whole, refusing one over `MAX_RESPONSE_BYTES`, into a replayable copy. */
async function capped(res: Response): Promise<Response> {
  const declared = Number(res.headers.get('content-length') ?? '0');
  const tooLarge = () => new Error(`response larger than ${MAX_RESPONSE_BYTES} bytes`);
  if (declared > MAX_RESPONSE_BYTES) {
    await res.body?.cancel().catch(() => undefined);
    throw tooLarge();
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (res.body !== null) {
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      size += chunk.byteLength;
      if (size > MAX_RESPONSE_BYTES) throw tooLarge();
      chunks.push(chunk);
    }
  }
  return new Response(NULL_BODY.has(res.status) ? null : Buffer.concat(chunks), {
    status: res.status,
    statusText: res.statusText,
    headers: res.headers,
  });
}

/** Sends one request through `fetchFn`, bounded in time and in the size read. */
async function send(fetchFn: FetchLike, url: string, init: RequestInit): Promise<Response> {
  return capped(
    await fetchFn(url, { ...init, signal: init.signal ?? AbortSignal.timeout(REQUEST_TIMEOUT_MS) }),
  );
}

/**
 * The oauth4webapi options sending requests through `fetchFn`. http endpoints are allowed
 * (`allowInsecureRequests`) because which hosts and schemes may be reached is the address
 * policy's decision (and, for the authorization endpoint a browser is sent to, the caller's):
 * a configuration may name an http endpoint on loopback or a private host it chose.
 */
export function requestOptions(fetchFn: FetchLike, headers?: Record<string, string>): RequestOptions {
  return {
    signal: () => AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    [oauth.customFetch]: (
      url: string,
      init: oauth.CustomFetchOptions<string, string | URLSearchParams | undefined>,
    ) => {
      // `redirect` is left out on purpose (see the module comment).
      const request: RequestInit = { method: init.method, headers: init.headers };
      if (init.body !== undefined) request.body = init.body;
      if (init.signal !== undefined) request.signal = init.signal;
      return send(fetchFn, url, request);
    },
    [oauth.allowInsecureRequests]: true,
    ...(headers === undefined ? {} : { headers }),
  };
}

/** A GET of a metadata document at a URL the caller was given (not a well-known one). */
export function getMetadata(
  fetchFn: FetchLike,
  url: string,
  headers: Record<string, string>,
): Promise<Response> {
  return send(fetchFn, url, { headers: { ...headers, accept: 'application/json' } });
}
