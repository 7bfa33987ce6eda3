/**
 * The operator API as the console calls it: the same routes and the same bearer token as curl or the CLI, so every
 * action is checked and recorded exactly as it is for them. The token lives in this tab's sessionStorage only.
 */
const TOKEN_KEY = 'dispersa.adminToken';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export const session = {
  token: (): string | null => sessionStorage.getItem(TOKEN_KEY),
  set: (token: string) => sessionStorage.setItem(TOKEN_KEY, token),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
};

let onUnauthorized: () => void = () => {};
export function whenUnauthorized(fn: () => void): void {
  onUnauthorized = fn;
}

async function call(method: string, path: string, body?: unknown, token = session.token()): Promise<Response> {
  const headers: Record<string, string> = { authorization: `Bearer ${token ?? ''}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (res.status === 401) {
    onUnauthorized();
    throw new ApiError(401, 'the admin token was refused');
  }
  return res;
}

/** The payload of a successful operator API answer; an ApiError with the service's own message otherwise. */
export async function api<T = any>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await call(method, path, body);
  const parsed = (await res.json().catch(() => null)) as { payload?: T; error?: string } | null;
  if (!res.ok) throw new ApiError(res.status, parsed?.error ?? `HTTP ${res.status}`);
  return parsed?.payload as T;
}

export async function metricsText(): Promise<string> {
  const res = await call('GET', '/metrics');
  if (!res.ok) throw new ApiError(res.status, `metrics answered HTTP ${res.status}`);
  return res.text();
}

/** Checks a token before keeping it. */
export async function tryToken(token: string): Promise<boolean> {
  const res = await fetch('/admin/v1/reconciliation/status', { headers: { authorization: `Bearer ${token}` } });
  return res.ok;
}

export const query = (params: Record<string, string | undefined>): string => {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) q.set(k, v);
  const s = q.toString();
  return s === '' ? '' : `?${s}`;
};
