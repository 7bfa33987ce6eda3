import type { LookupAddress } from 'node:dns';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { guardedLookup } from '../../src/webhooks/safe-post.ts';
import { checkUrl, type Resolver } from '../../src/webhooks/safe-target.ts';
import { startTestServer, type TestClient, type TestServer } from '../support/test-server.ts';
import { FORBIDDEN, LOCAL_URL_HOSTS } from './forbidden-forms.ts';
import { type Receiver, startReceiver } from './helpers.ts';

/**
 * SSRF: every forbidden form is refused when a URL is registered and again at connect time, and nothing
 * here sends a packet beyond loopback. Non-local forms are judged without any socket (the lookup hook
 * undici calls before dialling, and checkUrl with a fixed resolver); forms that reach this machine are
 * also tried over real HTTP against a receiver on 127.0.0.1 that must see no connection at all.
 */

const resolvable = FORBIDDEN.filter(([ip]) => ip !== 'not-an-ip');

function resolverOf(...addresses: string[]): Resolver & { calls: string[] } {
  const calls: string[] = [];
  const fn = async (host: string) => {
    calls.push(host);
    return addresses.map((address) => ({ address, family: address.includes(':') ? (6 as const) : (4 as const) }));
  };
  return Object.assign(fn, { calls });
}

function lookupThrough(resolve: Resolver, options: { all?: boolean; family?: number }) {
  return new Promise<{ err: NodeJS.ErrnoException | null; address: string | LookupAddress[] }>((done) => {
    guardedLookup(resolve, false)('target.test', options as never, (err, address) => done({ err, address }));
  });
}

describe('connect time: the lookup hook refuses the dialled address before any socket exists', () => {
  it.each(resolvable)('refuses %s (%s)', async (ip) => {
    for (const options of [{ all: true }, { all: false }, { all: false, family: ip.includes(':') ? 6 : 4 }]) {
      const { err } = await lookupThrough(resolverOf(ip), options);
      expect(err?.code).toBe('EDISPERSA_FORBIDDEN_ADDRESS');
    }
  });

  it.each(resolvable)('refuses %s hidden behind a public address of the same name', async (ip) => {
    const { err } = await lookupThrough(resolverOf('8.8.8.8', ip), { all: false, family: 4 });
    expect(err?.code).toBe('EDISPERSA_FORBIDDEN_ADDRESS');
  });

  it('passes a public address through, and lifts the rule only with the insecure flag', async () => {
    expect(await lookupThrough(resolverOf('8.8.8.8'), { all: false })).toEqual({ err: null, address: '8.8.8.8' });
    const lifted = await new Promise<unknown>((done) =>
      guardedLookup(resolverOf('127.0.0.1'), true)('x.test', { all: true } as never, (err, address) =>
        done({ err, address }),
      ),
    );
    expect(lifted).toEqual({ err: null, address: [{ address: '127.0.0.1', family: 4 }] });
  });
});

describe('registration: checkUrl refuses every forbidden form', () => {
  it.each(resolvable)('a host name resolving to %s (%s)', async (ip) => {
    const result = await checkUrl('https://hooks.example.test/dispersa', {
      allowInsecure: false,
      resolve: resolverOf(ip),
    });
    expect(result).toMatchObject({ ok: false, reason: 'forbidden_address' });
  });

  // Zoned and "invalid" forms are resolver output, not URL text: in a URL the WHATWG parser rewrites
  // 127.1 to 127.0.0.1 and 010.8.8.8 (octal) to the public 8.8.8.8, and the socket dials that same address.
  const literals = resolvable
    .filter(([ip, range]) => !ip.includes('%') && range !== 'invalid')
    .map(([ip]) => (ip.includes(':') ? `[${ip}]` : ip));
  it.each(literals)('the literal host %s, without resolving anything', async (host) => {
    const resolve = resolverOf('8.8.8.8');
    const result = await checkUrl(`https://${host}/dispersa`, { allowInsecure: false, resolve });
    expect(result).toMatchObject({ ok: false, reason: 'forbidden_address' });
    expect(resolve.calls).toEqual([]);
  });
});

describe('over real HTTP, insecure flag off', () => {
  let server: TestServer;
  let client: TestClient;
  let receiver: Receiver;

  beforeAll(async () => {
    server = await startTestServer();
    receiver = await startReceiver();
    client = await server.newClient();
  });
  afterAll(async () => {
    await server.stop();
    await receiver.close();
  });

  it.each(LOCAL_URL_HOSTS)(
    'PUT /v2/webhook refuses https://%s with 400 naming the rule, sending nothing',
    async (host) => {
      const url = `https://${host}:${receiver.port}/hook`;
      const res = await client.api.request('PUT', '/v2/webhook', { body: { webhookUrl: url } });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        error: expect.stringMatching(/^webhookUrl must resolve only to public addresses \(.+\)$/),
      });
      expect(receiver.connections).toBe(0);
    },
  );

  it('refuses http:// and credentials in the URL with 400 naming the rule', async () => {
    const http = await client.api.request('PUT', '/v2/webhook', { body: { webhookUrl: receiver.url } });
    expect(http).toMatchObject({
      status: 400,
      body: { error: expect.stringMatching(/^webhookUrl must use https:\/\//) },
    });
    // The 400 names the sandbox setting that lets a developer use a local http:// receiver.
    expect(http.body.error).toContain('DISPERSA_WEBHOOK_ALLOW_INSECURE=true');
    const creds = await client.api.request('PUT', '/v2/webhook', {
      body: { webhookUrl: `https://user:pw@127.0.0.1:${receiver.port}/hook` },
    });
    expect(creds).toMatchObject({ status: 400, body: { error: expect.stringMatching(/user name or password/) } });
    expect(receiver.connections).toBe(0);
  });

  it('records no change request for a refused URL and leaves the configuration untouched', async () => {
    const res = await client.api.get('/v2/webhook');
    expect(res.body.payload).toEqual({ webhookUrl: null, pendingChange: null, changed: false });
    const view = await server.admin('GET', `/admin/v1/webhooks/clients/${client.clientId}`);
    expect(view.body.payload.changeRequests).toEqual([]);
    expect(receiver.connections).toBe(0);
  });
});
