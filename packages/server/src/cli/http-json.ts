import { ConnectionError, DispersaError, describeFailure, errorFromResponse } from '@dispersa/sdk';

/**
 * Plain JSON over HTTP for what the SDK does not cover: the operator API (bearer token) and unsigned public
 * reads. Failures become the SDK's error classes, so every command reports and exits the same way.
 */

export interface JsonRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  url: string;
  headers?: Record<string, string>;
  body?: unknown;
  timeoutMs?: number;
}

function parse(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The parsed body of a 2xx answer (whole, not unwrapped); throws DispersaError/ConnectionError otherwise. */
export async function requestJson(req: JsonRequest): Promise<unknown> {
  const headers: Record<string, string> = { accept: 'application/json', ...req.headers };
  let body: string | undefined;
  if (req.body !== undefined) {
    body = JSON.stringify(req.body);
    headers['content-type'] = 'application/json';
  }
  const timeoutMs = req.timeoutMs ?? 30_000;
  const timeout = AbortSignal.timeout(timeoutMs);
  let response: Response;
  let text: string;
  try {
    response = await fetch(req.url, { method: req.method, headers, body, signal: timeout });
    text = await response.text();
  } catch (err) {
    const why = timeout.aborted ? `no answer within ${timeoutMs} ms` : describeFailure(err);
    throw new ConnectionError(`${req.method} ${req.url}: ${why}`, { cause: err });
  }
  const parsed = parse(text);
  if (!response.ok) {
    throw errorFromResponse(response.status, parsed, response.headers.get('x-trace-id') ?? undefined);
  }
  return parsed;
}

/** The payload of a `{status, traceId, payload}` envelope; a body without one is returned as is. */
export function payloadOf(body: unknown): unknown {
  if (typeof body === 'object' && body !== null && 'payload' in body) return (body as { payload: unknown }).payload;
  if (typeof body === 'object' && body !== null) return body;
  throw new DispersaError('the answer is not a JSON object', { body });
}

export interface AdminApi {
  /** The payload of the operator API's answer. */
  call(method: JsonRequest['method'], path: string, body?: unknown): Promise<unknown>;
}

export function createAdminApi(adminUrl: string, token: string): AdminApi {
  return {
    async call(method, path, body) {
      const answer = await requestJson({
        method,
        url: `${adminUrl}${path}`,
        headers: { authorization: `Bearer ${token}` },
        body,
      });
      return payloadOf(answer);
    },
  };
}

/** A query string of the given entries, undefined ones left out; '' when none. */
export function queryString(entries: Record<string, string | number | undefined>): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(entries)) if (value !== undefined) params.append(name, String(value));
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}
