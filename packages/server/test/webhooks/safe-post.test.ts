import { createServer } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createSafePost, type OutgoingEvent, type SafePoster } from '../../src/webhooks/safe-post.ts';
import { checkUrl, type Resolver } from '../../src/webhooks/safe-target.ts';
import { type Receiver, startReceiver } from './helpers.ts';

function tableResolver(table: Record<string, string[]>): Resolver & { calls: string[] } {
  const calls: string[] = [];
  const resolve = async (hostname: string) => {
    calls.push(hostname);
    const found = table[hostname];
    if (found === undefined) throw Object.assign(new Error(`ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return found.map((address) => ({ address, family: (address.includes(':') ? 6 : 4) as 4 | 6 }));
  };
  return Object.assign(resolve, { calls });
}

const event = (url: string, overrides: Partial<OutgoingEvent> = {}): OutgoingEvent => ({
  url,
  body: '{"id":"evt_1","type":"payment.state_changed","test":false,"createdAt":"2026-01-01T00:00:00.000Z","data":{}}',
  eventId: 'evt_1',
  attempt: 3,
  signature: 'aGVhZGVy..c2ln',
  ...overrides,
});

let receiver: Receiver;
let other: Receiver;
const posters: SafePoster[] = [];
function poster(options: Parameters<typeof createSafePost>[0]): SafePoster {
  const p = createSafePost(options);
  posters.push(p);
  return p;
}

beforeAll(async () => {
  receiver = await startReceiver();
  other = await startReceiver();
});
afterEach(async () => {
  await Promise.all(posters.splice(0).map((p) => p.close()));
  receiver.requests.length = 0;
  other.requests.length = 0;
  receiver.setHandler((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
});
afterAll(async () => {
  await receiver.close();
  await other.close();
});

describe('safe post: delivery', () => {
  it('posts the exact body with the headers of the contract and reports the answer', async () => {
    receiver.setHandler((_req, res) => res.writeHead(204).end());
    const e = event(receiver.url);
    const result = await poster({ allowInsecure: true }).post(e);
    expect(result).toMatchObject({ ok: true, statusCode: 204, body: '' });
    expect(result.error).toBeUndefined();
    expect(result.durationMs).toBeGreaterThanOrEqual(0);
    const [req] = receiver.requests;
    expect(req!.method).toBe('POST');
    expect(req!.url).toBe('/hook');
    expect(req!.body.toString('utf8')).toBe(e.body);
    expect(req!.headers['content-type']).toBe('application/json');
    expect(req!.headers['x-dispersa-signature']).toBe('aGVhZGVy..c2ln');
    expect(req!.headers['x-dispersa-event-id']).toBe('evt_1');
    expect(req!.headers['x-dispersa-delivery-attempt']).toBe('3');
  });

  it('returns the answer body and treats a non-2xx answer as not ok', async () => {
    receiver.setHandler((_req, res) => res.writeHead(503).end('busy'));
    const result = await poster({ allowInsecure: true }).post(event(receiver.url));
    expect(result).toMatchObject({ ok: false, statusCode: 503, body: 'busy' });
  });

  it('dials the address its resolver gives for a host name', async () => {
    const resolve = tableResolver({ 'receiver.test': ['127.0.0.1'] });
    const result = await poster({ allowInsecure: true, resolve }).post(
      event(`http://receiver.test:${receiver.port}/hook`),
    );
    expect(result).toMatchObject({ ok: true, statusCode: 200 });
    expect(resolve.calls).toEqual(['receiver.test']);
    expect(receiver.requests[0]!.headers['host']).toBe(`receiver.test:${receiver.port}`);
  });

  it('does not follow redirects: a 3xx is a failed attempt and the target is never called', async () => {
    receiver.setHandler((_req, res) => res.writeHead(302, { location: other.url }).end());
    const result = await poster({ allowInsecure: true }).post(event(receiver.url));
    expect(result).toMatchObject({ ok: false, statusCode: 302 });
    expect(other.requests).toHaveLength(0);
  });

  it('reports a refused connection as a network error and never throws', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as { port: number }).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const result = await poster({ allowInsecure: true }).post(event(`http://127.0.0.1:${port}/hook`));
    expect(result).toMatchObject({ ok: false, errorKind: 'network' });
    expect(result.statusCode).toBeUndefined();
    expect(result.error).toMatch(/ECONNREFUSED/);
  });
});

describe('safe post: bounds', () => {
  it('stops reading an oversized answer at the bound', async () => {
    receiver.setHandler((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      // 4 MiB in 64 KiB writes; the poster must stop long before the end.
      let left = 64;
      const chunk = Buffer.alloc(64 * 1024, 'x');
      const write = () => {
        while (left > 0) {
          left--;
          if (!res.write(chunk)) return void res.once('drain', write);
        }
        res.end();
      };
      res.on('error', () => {});
      write();
    });
    const result = await poster({ allowInsecure: true, maxResponseBytes: 64 * 1024 }).post(event(receiver.url));
    // The 2xx status already acknowledged the event; the body was not kept.
    expect(result).toMatchObject({ ok: true, statusCode: 200, errorKind: 'response_too_large' });
    expect(result.body).toBeUndefined();
  });

  it('a 500 with an oversized body is not ok', async () => {
    receiver.setHandler((_req, res) => {
      res.on('error', () => {});
      res.writeHead(500).end(Buffer.alloc(200 * 1024, 'y'));
    });
    const result = await poster({ allowInsecure: true, maxResponseBytes: 1024 }).post(event(receiver.url));
    expect(result).toMatchObject({ ok: false, statusCode: 500, errorKind: 'response_too_large' });
  });

  it('bounds a receiver that never answers', async () => {
    receiver.setHandler(() => {});
    const result = await poster({ allowInsecure: true, timeoutMs: 300 }).post(event(receiver.url));
    expect(result).toMatchObject({ ok: false, errorKind: 'timeout' });
    expect(result.statusCode).toBeUndefined();
    expect(result.durationMs).toBeGreaterThanOrEqual(250);
    expect(result.durationMs).toBeLessThan(15_000);
  });

  it('bounds a receiver that answers its headers and then trickles the body', async () => {
    receiver.setHandler((_req, res) => {
      res.writeHead(500, { 'content-type': 'text/plain' });
      const timer = setInterval(() => res.write('.'), 50);
      res.on('close', () => clearInterval(timer));
    });
    const started = Date.now();
    const result = await poster({ allowInsecure: true, timeoutMs: 400 }).post(event(receiver.url));
    expect(result).toMatchObject({ ok: false, statusCode: 500, errorKind: 'timeout' });
    expect(Date.now() - started).toBeLessThan(15_000);
  });
});

describe('safe post: address rules at connect time (insecure off)', () => {
  it('refuses a host name that resolves to 127.0.0.1 before any socket opens', async () => {
    const before = receiver.connections;
    const resolve = tableResolver({ 'evil.test': ['127.0.0.1'] });
    const result = await poster({ allowInsecure: false, resolve }).post(
      event(`https://evil.test:${receiver.port}/hook`),
    );
    expect(result).toMatchObject({ ok: false, errorKind: 'forbidden_address' });
    expect(result.error).toMatch(/127\.0\.0\.1/);
    expect(resolve.calls).toEqual(['evil.test']);
    expect(receiver.connections).toBe(before);
  });

  it('refuses when any one of several resolved addresses is forbidden', async () => {
    const before = receiver.connections;
    const resolve = tableResolver({ 'evil.test': ['::1', '127.0.0.1'] });
    const result = await poster({ allowInsecure: false, resolve }).post(
      event(`https://evil.test:${receiver.port}/hook`),
    );
    expect(result).toMatchObject({ ok: false, errorKind: 'forbidden_address' });
    expect(receiver.connections).toBe(before);
  });

  it('catches DNS rebinding: the name passed checkUrl, then resolves to loopback when dialled', async () => {
    const answers = [['8.8.8.8'], ['127.0.0.1']];
    const rebinding: Resolver = async () =>
      (answers.shift() ?? ['127.0.0.1']).map((address) => ({ address, family: 4 }));
    const url = `https://rebind.test:${receiver.port}/hook`;
    // checkUrl only resolves; it does not dial 8.8.8.8.
    expect((await checkUrl(url, { allowInsecure: false, resolve: rebinding })).ok).toBe(true);
    const before = receiver.connections;
    const result = await poster({ allowInsecure: false, resolve: rebinding }).post(event(url));
    expect(result).toMatchObject({ ok: false, errorKind: 'forbidden_address' });
    expect(receiver.connections).toBe(before);
  });

  it.each([
    'https://127.0.0.1:PORT/hook',
    'https://2130706433:PORT/hook',
    'https://[::ffff:127.0.0.1]:PORT/hook',
    'https://[::1]:PORT/hook',
  ])('refuses the literal %s without connecting', async (template) => {
    const before = receiver.connections;
    const resolve = tableResolver({});
    const result = await poster({ allowInsecure: false, resolve }).post(
      event(template.replace('PORT', String(receiver.port))),
    );
    expect(result).toMatchObject({ ok: false, errorKind: 'forbidden_address', durationMs: 0 });
    expect(resolve.calls).toEqual([]);
    expect(receiver.connections).toBe(before);
  });

  it('refuses http:// and userinfo as invalid targets', async () => {
    const p = poster({ allowInsecure: false, resolve: tableResolver({}) });
    expect(await p.post(event(receiver.url))).toMatchObject({ ok: false, errorKind: 'invalid_target' });
    expect(await p.post(event('https://u:p@hooks.example.com/'))).toMatchObject({
      ok: false,
      errorKind: 'invalid_target',
    });
    expect(await p.post(event('not a url'))).toMatchObject({ ok: false, errorKind: 'invalid_target' });
  });
});
