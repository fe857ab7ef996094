/**
 * The UI's calls to the management API. The browser sends the HttpOnly session cookie (same
 * origin); each call adds the session's CSRF token in `X-Skep-CSRF`, without which the API
 * does not honour the cookie (another program on this host may have seen the cookie, never
 * the token). The login page hands the token over in the URL fragment (`#skep-csrf=…`);
 * `adoptCsrfToken` moves it to this origin's storage and out of the address bar. A failure
 * becomes an `ApiError` with the API's `{code, message}`; a 401, or a 403 for a missing or
 * stale token, also tells the shell to show how to log in again.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const CSRF_KEY = 'skep-csrf';
const CSRF_FRAGMENT = /^#skep-csrf=([A-Za-z0-9_-]{20,128})$/;

/** Takes the CSRF token from the URL fragment the login page forwarded to, and removes it from the URL. */
export function adoptCsrfToken(): void {
  const token = CSRF_FRAGMENT.exec(location.hash)?.[1];
  if (token === undefined) return;
  localStorage.setItem(CSRF_KEY, token);
  history.replaceState(history.state, '', `${location.pathname}${location.search}`);
}

/** The headers every API call carries: the CSRF token, when the page has one. */
export function csrfHeaders(): Record<string, string> {
  const token = localStorage.getItem(CSRF_KEY);
  return token === null ? {} : { 'x-skep-csrf': token };
}

type Listener = () => void;
const loggedOutListeners = new Set<Listener>();
/** Called when the API says the session is gone (401). */
export function onLoggedOut(listener: Listener): () => void {
  loggedOutListeners.add(listener);
  return () => loggedOutListeners.delete(listener);
}

async function failure(res: Response): Promise<ApiError> {
  const text = await res.text();
  let code = `http_${res.status}`;
  let message = text.trim() === '' ? res.statusText || `the server answered ${res.status}` : text.trim();
  try {
    const body = JSON.parse(text) as { code?: unknown; message?: unknown };
    if (typeof body.code === 'string') code = body.code;
    if (typeof body.message === 'string') message = body.message;
  } catch {
    // not JSON: keep the text
  }
  if (res.status === 401 || (res.status === 403 && res.headers.get('x-skep-csrf') === 'required'))
    for (const listener of loggedOutListeners) listener();
  return new ApiError(res.status, code, message);
}

export async function request(method: string, path: string, body?: unknown): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers: { ...csrfHeaders(), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  } catch (err) {
    throw new ApiError(
      0,
      'unreachable',
      `cannot reach skep serve (${(err as Error).message}); is it still running?`,
    );
  }
  if (!res.ok) throw await failure(res);
  return res;
}

/** A JSON call; `undefined` for an empty answer (204). */
export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await request(method, path, body);
  const text = await res.text();
  return (text === '' ? undefined : JSON.parse(text)) as T;
}

export const get = <T>(path: string): Promise<T> => api<T>('GET', path);

export async function getText(path: string): Promise<string> {
  return (await request('GET', path)).text();
}

/** A path segment, encoded (server names carry slashes). */
export const seg = (value: string): string => encodeURIComponent(value);
