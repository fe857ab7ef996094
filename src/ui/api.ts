/**
 * The UI's calls to the management API. They carry no credential of their own: the browser
 * sends the HttpOnly session cookie (same origin). A failure becomes an `ApiError` with the
 * API's `{code, message}`; a 401 also tells the shell to show how to log in again.
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
  if (res.status === 401) for (const listener of loggedOutListeners) listener();
  return new ApiError(res.status, code, message);
}

export async function request(method: string, path: string, body?: unknown): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
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
