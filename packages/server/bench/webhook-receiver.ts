import { createPublicKey, type JsonWebKey, type KeyObject, verify } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The bench's webhook receiver, in its own process (forked by webhook-delivery.ts) so that its CPU is not
 * the sender's: node:http, keep-alive, answers 200 at once. It verifies every signature, on node:crypto
 * from the JWKS it is given, so the bench proves the events were signed, not just sent.
 * IPC: receives {jwks}, answers {port}; receives 'report', answers the counts.
 */

interface Jwk {
  kid: string;
  n: string;
  e: string;
}

const keys = new Map<string, KeyObject>();
const counts = { received: 0, verified: 0, badSignature: 0, eventIds: new Set<string>() };

function check(body: Buffer, header: string | undefined): boolean {
  const [protectedB64 = '', , signatureB64 = ''] = (header ?? '').split('.');
  const { kid } = JSON.parse(Buffer.from(protectedB64, 'base64url').toString('utf8')) as { kid: string };
  const key = keys.get(kid);
  if (key === undefined) return false;
  const input = Buffer.from(`${protectedB64}.${body.toString('base64url')}`, 'ascii');
  return verify('sha256', input, key, Buffer.from(signatureB64, 'base64url'));
}

const server = createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    counts.received++;
    counts.eventIds.add(String(req.headers['x-dispersa-event-id']));
    if (check(Buffer.concat(chunks), req.headers['x-dispersa-signature'] as string | undefined)) counts.verified++;
    else counts.badSignature++;
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': '2' }).end('{}');
  });
});

process.on('message', (message: unknown) => {
  if (message === 'report') {
    process.send?.({
      received: counts.received,
      verified: counts.verified,
      badSignature: counts.badSignature,
      distinctEvents: counts.eventIds.size,
    });
    server.closeAllConnections();
    server.close(() => process.disconnect());
    return;
  }
  const { jwks } = message as { jwks: { keys: Jwk[] } };
  for (const k of jwks.keys) {
    keys.set(k.kid, createPublicKey({ key: { kty: 'RSA', n: k.n, e: k.e } as JsonWebKey, format: 'jwk' }));
  }
  server.listen(0, '127.0.0.1', () => process.send?.({ port: (server.address() as AddressInfo).port }));
});
