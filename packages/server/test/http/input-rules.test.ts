import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pmBody } from '../beneficiaries/helpers.ts';
import { newKey, PM, pay } from '../support/payments.ts';
import { ADMIN_TOKEN, startTestServer, type TestClient, type TestServer } from '../support/test-server.ts';

/** Issue 13, items 1 and 2: control characters anywhere are a 400 naming the field; framework errors are `{ error }`. */

let server: TestServer;
let client: TestClient;

beforeAll(async () => {
  server = await startTestServer();
  client = await server.newClient({ fundMinor: 10_000_000n });
});
afterAll(async () => server?.stop());

/** One raw HTTP exchange on a socket: what the server writes back, whole. */
function rawExchange(url: string, request: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) }, () => socket.write(request));
    let data = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk) => {
      data += chunk;
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(data));
    socket.setTimeout(5000, () => socket.destroy());
  });
}

function bodyOf(raw: string): string {
  return raw.slice(raw.indexOf('\r\n\r\n') + 4);
}

describe('control characters in bodies', () => {
  const broken = ['\u0000', '\u0001', '\u001b', '\u007f', '\n'];

  it.each(['beneficiary', 'beneficiaryName', 'quoteId', 'beneficiaryId', 'bankCode'])(
    'payment field %s: 400 naming it, nothing created',
    async (field) => {
      for (const c of broken) {
        const res = await pay(client, '1000', { ...PM, rail: 'CCE', beneficiaryName: 'Ana', [field]: `x${c}y` });
        expect(res.status, `${field} ${JSON.stringify(c)}`).toBe(400);
        expect(res.body).toEqual({ error: `${field} must not contain control characters` });
      }
      const list = await client.api.get('/v2/payments');
      expect(list.body.payload.data).toEqual([]);
    },
  );

  it('a lone surrogate is refused too', async () => {
    const res = await pay(client, '1000', { ...PM, beneficiary: '0414\ud800123' });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'beneficiary must be valid Unicode text' });
  });

  it.each(['alias', 'account', 'docNumber'])('beneficiary field %s: 400 naming it, nothing created', async (field) => {
    const res = await client.api.post('/v2/beneficiaries', pmBody({ [field]: 'a\u0000b' }));
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: `${field} must not contain control characters` });
    const list = await client.api.get('/v2/beneficiaries');
    expect(list.body.payload.data).toEqual([]);
  });

  it('a nested field is named by its path', async () => {
    const res = await server.admin('PUT', `/admin/v1/keys/${client.keyId}/limits`, {
      limits: [{ rail: 'P\u0000M', perPaymentMaxMinor: '1', dailyMaxMinor: '1' }],
    });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'limits.0.rail must not contain control characters' });
  });

  it('operator: client name and funding reference', async () => {
    const created = await server.admin('POST', '/admin/v1/clients', { name: 'evil\u0000', currency: 'VES' });
    expect(created.status).toBe(400);
    expect(created.body).toEqual({ error: 'name must not contain control characters' });
    const funded = await server.admin('POST', `/admin/v1/clients/${client.clientId}/fundings`, {
      amountMinor: '100',
      reference: 'ref\u0000',
    });
    expect(funded.status).toBe(400);
    expect(funded.body).toEqual({ error: 'reference must not contain control characters' });
    expect((await client.api.get('/v2/balance')).body.payload.availableMinor).toBe('10000000');
  });

  it('text files and notes keep their line breaks, never a NUL', async () => {
    const csv = 'bankLineId,bookedAt,direction,amountMinor,currency,reference\n';
    const withNul = await server.admin('POST', '/admin/v1/reconciliation/statements', {
      format: 'csv',
      content: `${csv}\u0000`,
    });
    expect(withNul.status).toBe(400);
    expect(withNul.body).toEqual({ error: 'content must not contain control characters' });
    // A PEM is several lines: the test client registration above went through with them.
    expect(client.keyId).toMatch(/^key_/);
  });
});

describe('control characters in paths and queries', () => {
  it.each([
    ['NUL', '/v2/payments/pay_%00'],
    ['SOH', '/v2/payments/pay_0000000000000001%01'],
    ['65 characters', `/v2/payments/${'9'.repeat(65)}`],
    ['5000 characters', `/v2/payments/${'9'.repeat(5000)}`],
    ['NUL', '/v2/beneficiaries/ben_%00'],
    ['space', '/v2/payments/pay%20x'],
  ])('an id with %s (%#): 404 { error }', async (_label, target) => {
    const res = await client.api.get(target);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: 'not found' });
  });

  it.each([
    ['NUL', '/admin/v1/clients/%00'],
    ['300 characters', `/admin/v1/clients/${'c'.repeat(300)}`],
    ['DEL', '/admin/v1/webhooks/events/evt_%7f'],
    ['ESC', '/admin/v1/reconciliation/exceptions/%1b'],
  ])('an operator id with %s (%#): 404 { error }', async (_label, target) => {
    const res = await server.admin('GET', target);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: 'not found' });
  });

  it('a repeated query parameter: 400 naming it', async () => {
    const res = await client.api.get('/v2/payments?limit=1&limit=2');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'limit must be given once' });
  });

  it('an idempotency key with a tab (which HTTP lets through): 400, nothing created', async () => {
    const res = await pay(client, '1000', PM, `${newKey()}\tx`);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'idempotency-key must not contain control characters' });
    expect((await client.api.get('/v2/payments')).body.payload.data).toEqual([]);
  });

  it('a query value with a control character: 400 naming it', async () => {
    const res = await client.api.get('/v2/payments?cursor=pay_%00');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'cursor must not contain control characters' });
    const admin = await server.admin('GET', '/admin/v1/payments?clientId=%00');
    expect(admin.status).toBe(400);
    expect(admin.body).toEqual({ error: 'clientId must not contain control characters' });
  });
});

describe('framework errors through the one renderer', () => {
  it('a path the router cannot decode: 400 { error }, no echo', async () => {
    const res = await client.api.get('/v2/payments/%ZZ');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'malformed URL' });
    expect(res.headers.get('x-trace-id')).toMatch(/^tr_/);
    const admin = await server.admin('GET', '/admin/v1/clients/%ZZ');
    expect(admin.body).toEqual({ error: 'malformed URL' });
  });

  it('an unsupported content type names no header value', async () => {
    const res = await server.admin('POST', '/admin/v1/clients', undefined);
    expect(res.status).toBe(400);
    const typed = await fetch(`${server.adminUrl}/admin/v1/clients`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'text/evil-echo' },
      body: 'x',
    });
    expect(typed.status).toBe(415);
    expect(await typed.json()).toEqual({ error: 'body content-type must be application/json' });
  });

  it('an oversized header: 431 { error }; on HEAD, no body', async () => {
    const big = 'a'.repeat(20_000);
    const get = await rawExchange(server.baseUrl, `GET /v2/payments HTTP/1.1\r\nHost: x\r\nx-big: ${big}\r\n\r\n`);
    expect(get).toMatch(/^HTTP\/1\.1 431 /);
    expect(JSON.parse(bodyOf(get))).toEqual({ error: 'request header fields too large' });
    const head = await rawExchange(server.baseUrl, `HEAD /v2/payments HTTP/1.1\r\nHost: x\r\nx-big: ${big}\r\n\r\n`);
    expect(head).toMatch(/^HTTP\/1\.1 431 /);
    expect(bodyOf(head)).toBe('');
  });

  it('malformed HTTP: 400 { error }, nothing echoed', async () => {
    const secret = 'sk_test_THISMUSTNOTCOMEBACK';
    for (const request of [
      `GET /v2/payments HTTP/1.1\r\nHost: x\r\nx-api-key: ${secret}\r\nbad header line\r\n\r\n`,
      `GARBAGE\u0000 ${secret}\r\n\r\n`,
      `POST /v2/payments HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\nx-api-key: ${secret}\r\n\r\nhello`,
    ]) {
      const answer = await rawExchange(server.adminUrl, request);
      expect(answer).toMatch(/^HTTP\/1\.1 400 /);
      expect(JSON.parse(bodyOf(answer))).toEqual({ error: 'malformed HTTP request' });
      expect(answer).not.toContain(secret);
    }
  });

  it('idempotency keys with control characters never reach the database', async () => {
    const key = `${newKey()}\u0001`;
    const res = await fetch(`${server.baseUrl}/v2/payments`, {
      method: 'POST',
      headers: { 'idempotency-key': key },
    }).catch((err: unknown) => err);
    // fetch itself refuses such a header value; the server's parser would too (malformed HTTP above).
    expect(res).toBeInstanceOf(Error);
  });
});
