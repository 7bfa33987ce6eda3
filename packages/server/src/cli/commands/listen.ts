import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createJwksCache, parseEvent, SIGNATURE_HEADER, SignatureVerificationError } from '@dispersa/sdk';
import { UsageError } from '../args.ts';
import { type CommandContext, PRINTED } from '../command.ts';
import { resolveBaseUrl } from '../connection.ts';
import { fetchJwks } from '../jwks.ts';

/**
 * `dispersa listen`: a local webhook receiver for developers wiring their own. Every POST is verified against
 * the service's key set (RS256 detached JWS over the raw body, operator contract section 7); a verified event is
 * printed as one JSON line on stdout and acknowledged with 200, anything else is refused with 400 and a line on
 * stderr. It answers the webhook.verification challenge, so `dispersa webhook set <its URL>` proves control.
 */

const MAX_BODY_BYTES = 1_048_576;

function readBody(request: IncomingMessage): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        resolve(null);
        request.destroy();
        return;
      }
      chunks.push(chunk);
    });
    request.on('end', () => resolve(Buffer.concat(chunks)));
    request.on('error', reject);
  });
}

function answer(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  response.end(text);
}

export async function listen(ctx: CommandContext): Promise<unknown> {
  const port = ctx.flags.integer('port');
  if (port === undefined || port > 65535) throw new UsageError('--port P is required (0 picks a free port)', ctx.name);
  const host = ctx.flags.string('host') ?? '127.0.0.1';
  const jwksUrl = ctx.flags.string('jwks-url') ?? `${await resolveBaseUrl(ctx)}/v2/webhook/keys`;
  const toleranceSec = ctx.flags.integer('tolerance-sec') ?? 300;
  const keys = createJwksCache(() => fetchJwks(ctx, jwksUrl));
  const refuse = (response: ServerResponse, status: number, message: string) => {
    ctx.note(`refused delivery: ${message}`);
    answer(response, status, { error: message });
  };

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    if (request.method !== 'POST') return refuse(response, 405, `${request.method} is not a webhook delivery`);
    const raw = await readBody(request);
    if (raw === null) return refuse(response, 413, `body larger than ${MAX_BODY_BYTES} bytes`);
    const header = request.headers[SIGNATURE_HEADER];
    let kid: string;
    try {
      ({ kid } = await keys.verify(raw, typeof header === 'string' ? header : '', { toleranceSec }));
    } catch (err) {
      if (err instanceof SignatureVerificationError) return refuse(response, 400, `${err.reason}: ${err.message}`);
      // The key set could not be fetched: not the sender's fault, so ask for a redelivery (5xx).
      ctx.note(`cannot verify, key set unavailable from ${jwksUrl}: ${(err as Error).message}`);
      return answer(response, 503, { error: 'signing keys unavailable' });
    }
    let event: ReturnType<typeof parseEvent>;
    try {
      event = parseEvent(raw);
    } catch (err) {
      return refuse(response, 400, `signed, but not an event: ${(err as Error).message}`);
    }
    // The body as the service sent it (one line), not the SDK's normalised view, so new fields show too.
    ctx.io.stdout.write(`${JSON.stringify(JSON.parse(raw.toString('utf8')))}\n`);
    const attempt = request.headers['x-dispersa-delivery-attempt'];
    ctx.note(
      `verified ${event.type === 'unrecognized' ? event.originalType : event.type} ${event.id}` +
        `${event.test ? ' (test)' : ''} kid ${kid}${typeof attempt === 'string' ? `, attempt ${attempt}` : ''}`,
    );
    if (event.type === 'webhook.verification') return answer(response, 200, { challenge: event.data.challenge });
    return answer(response, 200, { received: true });
  }

  const server = createServer((request, response) => {
    handle(request, response).catch((err: unknown) => {
      ctx.note(`receiver error: ${(err as Error).message}`);
      if (!response.headersSent) answer(response, 500, { error: 'receiver error' });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err) => reject(new UsageError(`cannot listen on ${host}:${port}: ${err.message}`)));
    server.listen(port, host, resolve);
  });
  const bound = server.address() as AddressInfo;
  const shown = bound.family === 'IPv6' ? `[${bound.address}]` : bound.address;
  ctx.note(`listening on http://${shown}:${bound.port}/ (keys from ${jwksUrl}); Ctrl-C stops`);

  await new Promise<void>((resolve) => {
    if (ctx.io.signal.aborted) resolve();
    ctx.io.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return PRINTED;
}
