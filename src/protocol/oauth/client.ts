/**
 * The OAuth client's requests to an authorization server, on oauth4webapi: dynamic client
 * registration (RFC 7591), the authorization request with PKCE S256 (RFC 7636) and its
 * response (RFC 6749 §4.1.2, RFC 9207), and the token endpoint grants — authorization code,
 * refresh (RFC 6749 §6), token exchange (RFC 8693). A failed answer becomes an
 * `OAuthResponseError` with the HTTP status and the RFC 6749 §5.2 error code, which callers
 * turn into their own messages.
 */
import * as oauth from 'oauth4webapi';
import { type ErrorCode, isRecord } from '../../shared/index.js';
import { type FetchLike, requestOptions } from './transport.js';

/** Who the client is at the authorization server. */
export interface ClientCredentials {
  clientId: string;
  /** A confidential client's secret: sent with HTTP Basic (RFC 6749 §2.3.1). */
  clientSecret?: string;
}

/** What a successful token response gave. */
export interface TokenResponse {
  accessToken: string;
  /** `expires_in` (RFC 6749 §5.1), seconds, when given. */
  expiresIn?: number;
  refreshToken?: string;
  /** `issued_token_type` (RFC 8693 §2.2.1), when given. */
  issuedTokenType?: string;
}

/** RFC 6749 §5.2 `error` values that say the client's credentials or grant were refused. */
const REFUSED = new Set(['invalid_client', 'invalid_grant', 'unauthorized_client', 'invalid_token']);

/**
 * An authorization server's refusal or an answer this client cannot use. `code` (Skep's error
 * table): `unauthorized` when the server refused the credentials or grant (HTTP 401, or an
 * RFC 6749 §5.2 `invalid_client`/`invalid_grant`/`unauthorized_client`, RFC 6750 §3.1
 * `invalid_token`), `rate_limited` on HTTP 429, else `bad_gateway`; `error` keeps the
 * server's own code.
 */
export class OAuthResponseError extends Error {
  override readonly name = 'OAuthResponseError';
  readonly code: ErrorCode;
  constructor(
    /** The HTTP status of the answer. */
    readonly status: number,
    /** RFC 6749 §5.2 / RFC 7591 §3.2.2 `error`, when the body names one. */
    readonly error: string | undefined,
    /** The response field that is missing or malformed, for an answer that is not an error. */
    readonly field: string | undefined,
    options?: ErrorOptions,
  ) {
    super(
      field === undefined
        ? `the authorization server answered ${status}${error === undefined ? '' : ` (${error})`}`
        : `the authorization server's answer has no usable ${field}`,
      options,
    );
    this.code =
      field !== undefined
        ? 'bad_gateway'
        : status === 401 || (error !== undefined && REFUSED.has(error))
          ? 'unauthorized'
          : status === 429
            ? 'rate_limited'
            : 'bad_gateway';
  }
}

/** The response field an oauth4webapi processing error names ("response" body "x" property). */
function fieldOf(err: unknown): string | undefined {
  if (!(err instanceof oauth.OperationProcessingError)) return undefined;
  return /"response" body "([a-z_]+)" property/.exec(err.message)?.[1];
}

/**
 * Runs oauth4webapi's processing of `res`; a failure becomes an `OAuthResponseError` naming the
 * status and the `error` of the body, read from a copy taken before processing.
 */
async function processed<T>(res: Response, process: (res: Response) => Promise<T>): Promise<T> {
  const copy = res.clone();
  try {
    const result = await process(res);
    await copy.body?.cancel().catch(() => undefined);
    return result;
  } catch (cause) {
    const body: unknown = await copy.json().catch(() => undefined);
    const error = isRecord(body) && typeof body['error'] === 'string' ? body['error'] : undefined;
    throw new OAuthResponseError(
      res.status,
      error,
      res.ok && error === undefined ? fieldOf(cause) : undefined,
      {
        cause,
      },
    );
  }
}

/**
 * A token response without its ID token: this client uses the access and refresh tokens only
 * (it is not an OpenID Connect relying party), so an ID token an `openid` scope brings is
 * neither read nor validated, as before this client used oauth4webapi.
 */
async function withoutIdToken(res: Response): Promise<Response> {
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (isRecord(body) && 'id_token' in body) {
    const { id_token: _unused, ...rest } = body;
    return new Response(JSON.stringify(rest), {
      status: res.status,
      statusText: res.statusText,
      headers: res.headers,
    });
  }
  return new Response(text, { status: res.status, statusText: res.statusText, headers: res.headers });
}

/**
 * RFC 6749 §2.3.1 HTTP Basic client authentication. The id and secret are form-urlencoded the
 * way `encodeURIComponent` does it (space as "+"), which leaves "-", "_", ".", "!", "~", "*",
 * "'", "(" and ")" as they are: oauth4webapi's `ClientSecretBasic` escapes those too, which a
 * server that does not form-decode the credentials reads as a different client id.
 */
function clientSecretBasic(clientSecret: string): oauth.ClientAuth {
  const encode = (s: string) => encodeURIComponent(s).replace(/%20/g, '+');
  return (_as, client, _body, headers) => {
    const pair = `${encode(client.client_id)}:${encode(clientSecret)}`;
    headers.set('authorization', `Basic ${Buffer.from(pair).toString('base64')}`);
  };
}

function clientOf(credentials: ClientCredentials): { client: oauth.Client; auth: oauth.ClientAuth } {
  return {
    client: { client_id: credentials.clientId },
    // RFC 6749 §2.3.1: a confidential client authenticates with Basic; a public one (PKCE)
    // only names itself with `client_id` in the form.
    auth:
      credentials.clientSecret === undefined || credentials.clientSecret === ''
        ? oauth.None()
        : clientSecretBasic(credentials.clientSecret),
  };
}

function tokenResponse(body: oauth.TokenEndpointResponse): TokenResponse {
  const out: TokenResponse = { accessToken: body.access_token };
  if (typeof body.expires_in === 'number') out.expiresIn = body.expires_in;
  if (typeof body.refresh_token === 'string') out.refreshToken = body.refresh_token;
  if (typeof body['issued_token_type'] === 'string') out.issuedTokenType = body['issued_token_type'];
  return out;
}

/** RFC 7591 §3.1: registers a client; a 200 is taken like the 201 §3.2.1 names. */
export async function registerClient(
  as: oauth.AuthorizationServer,
  metadata: Partial<oauth.OmitSymbolProperties<oauth.Client>>,
  fetchFn: FetchLike,
): Promise<ClientCredentials> {
  let res = await oauth.dynamicClientRegistrationRequest(as, metadata, requestOptions(fetchFn));
  if (res.status === 200) res = new Response(res.body, { status: 201, headers: res.headers });
  const body = await processed(res, (r) => oauth.processDynamicClientRegistrationResponse(r));
  return {
    clientId: body.client_id,
    ...(typeof body.client_secret === 'string' ? { clientSecret: body.client_secret } : {}),
  };
}

/** One authorization request (RFC 6749 §4.1.1) and the secrets that go with it. */
export interface AuthorizationRequest {
  url: URL;
  state: string;
  /** RFC 7636 §4.1 code verifier, sent with the code. */
  codeVerifier: string;
}

/**
 * The authorization request URL (RFC 6749 §4.1.1): `extra` parameters (a configuration's
 * own) first, then the protocol's, which win — `response_type=code`, the client, the redirect
 * URI, a fresh `state`, the RFC 7636 §4.2 S256 challenge of a fresh verifier — then `params`
 * (the RFC 8707 resource, the scope).
 */
export async function authorizationRequest(
  authorizationEndpoint: string,
  clientId: string,
  redirectUri: string,
  parameters: { extra?: Record<string, string>; params: Record<string, string> },
): Promise<AuthorizationRequest> {
  const codeVerifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const url = new URL(authorizationEndpoint);
  const all: Record<string, string> = {
    ...parameters.extra,
    response_type: 'code',
    client_id: clientId,
    redirect_uri: redirectUri,
    state,
    code_challenge: await oauth.calculatePKCECodeChallenge(codeVerifier),
    code_challenge_method: 'S256',
    ...parameters.params,
  };
  for (const [k, v] of Object.entries(all)) url.searchParams.set(k, v);
  return { url, state, codeVerifier };
}

/** Why an authorization response (the redirect back) is not the one expected. */
export type CallbackProblem = 'state mismatch' | 'issuer mismatch';

/** The outcome of an authorization response. */
export type CallbackResult =
  | { kind: 'code'; parameters: URLSearchParams }
  | { kind: 'error'; error: string }
  | { kind: 'invalid'; problem: CallbackProblem | 'no code' };

/**
 * Checks an authorization response (RFC 6749 §4.1.2): the `state` binds it to our request
 * (§10.12); an `iss` (RFC 9207 §2.4) must name the issuer when one is known. The returned
 * parameters are what `authorizationCodeGrant` takes.
 */
export function checkAuthorizationResponse(
  issuer: string | undefined,
  clientId: string,
  parameters: URLSearchParams,
  expectedState: string,
): CallbackResult {
  const params = new URLSearchParams(parameters);
  // Without a known issuer there is nothing to compare an `iss` with.
  if (issuer === undefined) params.delete('iss');
  try {
    const checked = oauth.validateAuthResponse(
      { issuer: issuer ?? 'urn:unknown' },
      { client_id: clientId },
      params,
      expectedState,
    );
    if (!checked.get('code')) return { kind: 'invalid', problem: 'no code' };
    return { kind: 'code', parameters: checked };
  } catch (err) {
    if (err instanceof oauth.AuthorizationResponseError) return { kind: 'error', error: err.error };
    const message = (err as Error).message;
    return { kind: 'invalid', problem: message.includes('"iss"') ? 'issuer mismatch' : 'state mismatch' };
  }
}

/** RFC 6749 §4.1.3 with RFC 7636 §4.5: the code for tokens. */
export async function authorizationCodeGrant(
  as: oauth.AuthorizationServer,
  credentials: ClientCredentials,
  callback: URLSearchParams,
  redirectUri: string,
  codeVerifier: string,
  additionalParameters: Record<string, string>,
  fetchFn: FetchLike,
): Promise<TokenResponse> {
  const { client, auth } = clientOf(credentials);
  const res = await oauth.authorizationCodeGrantRequest(
    as,
    client,
    auth,
    callback,
    redirectUri,
    codeVerifier,
    {
      ...requestOptions(fetchFn),
      additionalParameters,
    },
  );
  return tokenResponse(
    await processed(await withoutIdToken(res), (r) => oauth.processAuthorizationCodeResponse(as, client, r)),
  );
}

/** RFC 6749 §6: a refresh token for new tokens. */
export async function refreshGrant(
  as: oauth.AuthorizationServer,
  credentials: ClientCredentials,
  refreshToken: string,
  additionalParameters: Record<string, string>,
  fetchFn: FetchLike,
): Promise<TokenResponse> {
  const { client, auth } = clientOf(credentials);
  const res = await oauth.refreshTokenGrantRequest(as, client, auth, refreshToken, {
    ...requestOptions(fetchFn),
    additionalParameters,
  });
  return tokenResponse(
    await processed(await withoutIdToken(res), (r) => oauth.processRefreshTokenResponse(as, client, r)),
  );
}

/** RFC 8693 §2.1: the grant type of a token exchange. */
export const TOKEN_EXCHANGE_GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';

/**
 * The client of a request where client authentication is optional (RFC 8693 §2.1, RFC 7662
 * §2.1 with another means of authorization): without credentials no client is named at all.
 */
function optionalClient(credentials: ClientCredentials | undefined): {
  client: oauth.Client;
  auth: oauth.ClientAuth;
} {
  // oauth4webapi needs a client object; with no authentication nothing of it is sent.
  return credentials === undefined
    ? { client: { client_id: 'anonymous' }, auth: () => undefined }
    : clientOf(credentials);
}

/** RFC 8693 §2.1 token exchange at `tokenEndpoint`. */
export async function tokenExchangeGrant(
  tokenEndpoint: string,
  credentials: ClientCredentials | undefined,
  parameters: Record<string, string>,
  fetchFn: FetchLike,
): Promise<TokenResponse> {
  const as: oauth.AuthorizationServer = {
    issuer: new URL(tokenEndpoint).origin,
    token_endpoint: tokenEndpoint,
  };
  const { client, auth } = optionalClient(credentials);
  const res = await oauth.genericTokenEndpointRequest(
    as,
    client,
    auth,
    TOKEN_EXCHANGE_GRANT,
    parameters,
    requestOptions(fetchFn),
  );
  return tokenResponse(
    await processed(await withoutIdToken(res), (r) =>
      oauth.processGenericTokenEndpointResponse(as, client, r),
    ),
  );
}

/**
 * RFC 7662 §2.1: asks the introspection endpoint about an access token; the answer (§2.2) is
 * returned whole, `active` a boolean. A refusal or an answer that is not a JSON introspection
 * response is an `OAuthResponseError`.
 */
export async function introspectToken(
  introspectionEndpoint: string,
  credentials: ClientCredentials | undefined,
  token: string,
  fetchFn: FetchLike,
): Promise<oauth.IntrospectionResponse> {
  const as: oauth.AuthorizationServer = {
    issuer: new URL(introspectionEndpoint).origin,
    introspection_endpoint: introspectionEndpoint,
  };
  const { client, auth } = optionalClient(credentials);
  const res = await oauth.introspectionRequest(as, client, auth, token, {
    ...requestOptions(fetchFn),
    additionalParameters: { token_type_hint: 'access_token' },
  });
  return processed(res, (r) => oauth.processIntrospectionResponse(as, client, r));
}
