import { connect } from 'node:net';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEmbeddedDb } from '../../src/db/embedded.ts';
import { createLogger } from '../../src/logger.ts';
import { testKeyPair } from '../support/keys.ts';
import { newKey, PM, pay } from '../support/payments.ts';
import { ADMIN_TOKEN, startTestServer, type TestClient, type TestServer } from '../support/test-server.ts';

/**
 * Issue 13, item 3: at trace level, malformed and oversized requests carrying real credentials leave none of them in
 * the log: no API key, signature, admin token, private key, and no raw request bytes (the HTTP parser's rawPacket
 * was logged as a byte array that the redaction did not cover).
 */

const lines: string[] = [];
const sink = new Writable({
  write(chunk, _encoding, done) {
    lines.push(String(chunk));
    done();
  },
});

let server: TestServer;
let client: TestClient;

beforeAll(async () => {
  server = await startTestServer({ logger: createLogger('trace', sink) });
  client = await server.newClient({ fundMinor: 1_000_000n });
});
afterAll(async () => server?.stop());

function rawExchange(url: string, request: string | Buffer, timeoutMs = 5000): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port) }, () => socket.write(request));
    let data = '';
    socket.setEncoding('latin1');
    socket.on('data', (c) => {
      data += c;
    });
    socket.on('error', () => resolve(data));
    socket.on('close', () => resolve(data));
    socket.setTimeout(timeoutMs, () => socket.destroy());
  });
}

/** The forms a secret can take in a log line: as text, and as the byte list pino writes for a Buffer. */
function forms(secret: string): string[] {
  const bytes = [...Buffer.from(secret, 'latin1')];
  return [secret, bytes.slice(0, 12).join(',')];
}

describe('logs at trace level', () => {
  it('hold no credential and no raw request bytes after malformed and oversized requests', async () => {
    const signature = 'c2lnbmF0dXJlLXRoYXQtbXVzdC1uZXZlci1iZS1sb2dnZWQ=';
    const privatePem = testKeyPair(0).privatePem;
    const privateChunk = privatePem.split('\n')[5]!;
    const creds = `x-api-key: ${client.apiKey}\r\nx-signature: ${signature}\r\nauthorization: Bearer ${ADMIN_TOKEN}\r\n`;

    // Ordinary traffic with the same credentials: signed requests, operator requests, a bad signature.
    expect((await pay(client, '1000', PM, newKey())).status).toBe(201);
    expect((await client.api.get('/v2/balance')).status).toBe(200);
    expect((await client.api.get('/v2/me', { signature })).status).toBe(401);
    expect((await server.admin('GET', `/admin/v1/clients/${client.clientId}`)).status).toBe(200);
    // A private key sent where it does not belong (an operator pasting the wrong file).
    expect(
      (await server.admin('POST', `/admin/v1/clients/${client.clientId}/keys`, { publicKeyPem: privatePem })).status,
    ).toBe(400);

    for (const url of [server.baseUrl, server.adminUrl]) {
      // Malformed HTTP: a header line without a colon, then NUL bytes.
      await rawExchange(url, `GET /v2/balance HTTP/1.1\r\nHost: x\r\n${creds}this is not a header\r\n\r\n`);
      await rawExchange(url, Buffer.from(`POST /v2/payments HTTP/1.1\r\n${creds}\u0000\u0001\r\n\r\n`, 'latin1'));
      // Oversized headers, GET and HEAD.
      const big = `x-pad: ${'p'.repeat(20_000)}\r\n`;
      await rawExchange(url, `GET /v2/balance HTTP/1.1\r\nHost: x\r\n${creds}${big}\r\n`);
      await rawExchange(url, `HEAD /v2/balance HTTP/1.1\r\nHost: x\r\n${creds}${big}\r\n`);
      // Conflicting lengths (request smuggling shape) and a bad URL with the key in the query.
      await rawExchange(
        url,
        `POST /v2/payments HTTP/1.1\r\nHost: x\r\n${creds}Content-Length: 3\r\nContent-Length: 4\r\n\r\nabcd`,
      );
      await rawExchange(url, `GET /v2/payments/%ZZ HTTP/1.1\r\nHost: x\r\n${creds}\r\n`);
      // A body over the limit.
      await rawExchange(
        url,
        `POST /admin/v1/clients HTTP/1.1\r\nHost: x\r\n${creds}content-type: application/json\r\nContent-Length: 40000000\r\n\r\n{"name":"${client.apiKey}"`,
        1000,
      );
    }
    // Let the server log what it logs about those connections.
    await new Promise((r) => setTimeout(r, 200));

    const log = lines.join('');
    expect(log).toContain('client error');
    expect(log.length).toBeGreaterThan(1000);
    for (const secret of [client.apiKey, signature, ADMIN_TOKEN, privateChunk]) {
      for (const form of forms(secret)) expect(log, `leaked: ${secret}`).not.toContain(form);
    }
    expect(log).not.toContain('rawPacket');
    expect(log).not.toContain('"type":"Buffer"');
  });

  it('a database error carries no query parameter (account and document numbers)', async () => {
    const db = await createEmbeddedDb(null);
    const out: string[] = [];
    const logger = createLogger('trace', {
      write: (line: string) => {
        out.push(line);
      },
    });
    try {
      await db.query('SELECT $1::text AS account, $2::int AS doc', ['04141234567\u0000', 'V-98765432']);
      expect.unreachable();
    } catch (err) {
      expect(JSON.stringify(err, Object.getOwnPropertyNames(err))).toContain('04141234567');
      logger.error({ err }, 'unhandled error');
    }
    try {
      await db.query('SELECT $1::int AS doc', ['V-98765432']);
      expect.unreachable();
    } catch (err) {
      logger.error({ err }, 'unhandled error');
    }
    await db.close();
    const text = out.join('');
    expect(text).toContain('unhandled error');
    expect(text).toContain('22P02');
    expect(text).not.toContain('04141234567');
    expect(text).not.toContain('98765432');
  });
});
