import { createPublicKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { buildEnvelope, verifyEnvelope } from '../src/auth/envelope.ts';

/**
 * The floor of the payments benchmark: a bare node:http server that does the one thing no implementation of the
 * spec can skip per request: read the request, rebuild the signed envelope and verify one RSA-2048 signature.
 * It answers the same pre-signed requests the service gets, so the service's figure divided by this one is the
 * share of the machine's ceiling the service reaches. Run as a child process by payments-bench.ts:
 *   FLOOR_KEYS=<json file {apiKey: privatePem}> FLOOR_PORT=<port> node --import tsx floor-server.ts
 */

const keys = new Map<string, KeyObject>();
for (const [apiKey, privatePem] of Object.entries(
  JSON.parse(readFileSync(process.env['FLOOR_KEYS']!, 'utf8')) as Record<string, string>,
)) {
  keys.set(apiKey, createPublicKey(privatePem));
}

const header = (v: string | string[] | undefined): string => (typeof v === 'string' ? v : '');

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    if (req.url === '/health') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
      return;
    }
    const apiKey = header(req.headers['x-api-key']);
    const key = keys.get(apiKey);
    const envelope = buildEnvelope({
      method: req.method ?? 'GET',
      target: req.url ?? '/',
      apiKey,
      idempotencySlot: header(req.headers['idempotency-key']),
      body: Buffer.concat(chunks),
      nonce: header(req.headers['x-nonce']),
    });
    if (key === undefined || !verifyEnvelope(envelope, header(req.headers['x-signature']), key)) {
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"invalid signature"}');
      return;
    }
    res
      .writeHead(req.method === 'POST' ? 201 : 200, { 'content-type': 'application/json' })
      .end('{"payload":{"id":"pay_0000000000000001","state":"completed"}}');
  });
});
server.listen(Number(process.env['FLOOR_PORT']), '127.0.0.1');
