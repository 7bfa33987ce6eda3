import { constants, type KeyObject, verify } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A real HTTP server on 127.0.0.1 that checks requests the way the interface spec says the service does,
 * written independently of the SDK's envelope code: 415 before authentication, then key, nonce and signature
 * headers, the NUL-joined envelope verified with the registered public key (PKCS#1 v1.5), and the per-key nonce
 * mark (writes strictly above it; reads also within the 64 below it, never twice). Only requests that pass reach
 * the scripted handler.
 */
export interface SeenRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** null for unsigned public routes; the server's verdict otherwise. */
  verdict: 'accepted' | 'unsupported_media_type' | 'unknown_key' | 'bad_signature' | 'nonce_replay' | null;
}

export interface JsonReply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  delayMs?: number;
}

/** 'destroy' drops the connection without an answer. */
export type Reply = JsonReply | 'destroy';

export type Handler = (request: SeenRequest) => Reply | Promise<Reply>;

export interface FakeServer {
  url: string;
  requests: SeenRequest[];
  /** Requests that reached the handler. */
  accepted(): SeenRequest[];
  close(): Promise<void>;
}

export function ok(payload: unknown, status = 200): JsonReply {
  return { status, body: { status: 'success', traceId: 'trace-ok', payload } };
}

export function fail(status: number, error: string): JsonReply {
  return { status, body: { error }, headers: { 'x-trace-id': `trace-${status}` } };
}

const PUBLIC = new Set(['/v2/version', '/health', '/v2/openapi.json', '/v2/webhook/keys']);

export async function startFakeServer(options: {
  apiKey: string;
  publicKey: KeyObject;
  handler: Handler;
  /** Hold the first n requests and judge them in reverse order of arrival, as if the network reordered them. */
  reverseFirst?: number;
}): Promise<FakeServer> {
  const requests: SeenRequest[] = [];
  const held: Array<() => void> = [];
  let mark = 0n;
  const seen = new Set<bigint>();

  function judge(method: string, url: string, headers: IncomingHttpHeaders, body: Buffer): SeenRequest['verdict'] {
    const path = url.split('?')[0] ?? '';
    const contentType = String(headers['content-type'] ?? '');
    if (body.length > 0 && !contentType.startsWith('application/json')) return 'unsupported_media_type';
    if (PUBLIC.has(path)) return null;
    const apiKey = headers['x-api-key'];
    const nonceText = headers['x-nonce'];
    const signature = headers['x-signature'];
    if (apiKey !== options.apiKey) return 'unknown_key';
    if (typeof nonceText !== 'string' || !/^[1-9][0-9]{0,37}$/.test(nonceText)) return 'nonce_replay';
    if (typeof signature !== 'string') return 'bad_signature';
    const keyed = method === 'POST' && (path.endsWith('/v2/payments') || path.endsWith('/v2/quotes'));
    const slot = keyed ? String(headers['idempotency-key'] ?? '') : '';
    const envelope = Buffer.concat([
      Buffer.from(`${method}\0${url}\0${apiKey}\0${slot}\0`, 'utf8'),
      body,
      Buffer.from(`\0${nonceText}`, 'utf8'),
    ]);
    const key = { key: options.publicKey, padding: constants.RSA_PKCS1_PADDING };
    if (!verify('sha256', envelope, key, Buffer.from(signature, 'base64'))) return 'bad_signature';
    const nonce = BigInt(nonceText);
    if (seen.has(nonce)) return 'nonce_replay';
    const fresh = nonce > mark || (method === 'GET' && nonce > mark - 64n);
    if (!fresh) return 'nonce_replay';
    seen.add(nonce);
    if (nonce > mark) mark = nonce;
    return 'accepted';
  }

  async function handle(req: IncomingMessage, res: ServerResponse, body: Buffer): Promise<void> {
    const method = req.method ?? '';
    const url = req.url ?? '';
    const verdict = judge(method, url, req.headers, body);
    const seenRequest: SeenRequest = { method, url, headers: req.headers, body, verdict };
    requests.push(seenRequest);
    let reply: Reply;
    if (verdict === 'unsupported_media_type') reply = fail(415, 'body content-type must be application/json');
    else if (verdict === 'unknown_key') reply = fail(401, 'unknown key');
    else if (verdict === 'bad_signature') reply = fail(401, 'bad signature');
    else if (verdict === 'nonce_replay') reply = fail(401, 'nonce replay');
    else reply = await options.handler(seenRequest);
    if (reply === 'destroy') {
      req.socket.destroy();
      return;
    }
    const send = (r: JsonReply) => {
      if (res.destroyed) return;
      const text = r.body === undefined ? '' : JSON.stringify(r.body);
      res.writeHead(r.status, { 'content-type': 'application/json', ...r.headers });
      res.end(text);
    };
    if (reply.delayMs) setTimeout(() => send(reply), reply.delayMs);
    else send(reply);
  }

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const run = () => void handle(req, res, Buffer.concat(chunks));
      if (held.length >= (options.reverseFirst ?? 0)) return run();
      held.push(run);
      if (held.length === options.reverseFirst) for (const next of [...held].reverse()) next();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    accepted: () => requests.filter((r) => r.verdict === 'accepted' || r.verdict === null),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
