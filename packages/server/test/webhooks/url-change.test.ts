import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/shared/clock.ts';
import { createSafePost, type SafePoster } from '../../src/webhooks/safe-post.ts';
import { checkUrl, type Resolver } from '../../src/webhooks/safe-target.ts';
import { createSigningKeys, type SigningKeys } from '../../src/webhooks/signing-keys.ts';
import {
  createUrlChangeService,
  type UrlChangeService,
  VERIFICATION_WINDOW_MS,
} from '../../src/webhooks/url-change.ts';
import { createVerificationSender } from '../../src/webhooks/verification-sender.ts';
import { echoChallenge, hangUp } from './e2e.ts';
import { insertClient, openTestDb, type Receiver, startReceiver, type WebhookTestDb } from './helpers.ts';

/**
 * The URL change service with an injected clock and resolver: what the HTTP tests cannot reach without
 * real DNS or a day of waiting (unresolvable hosts, DNS rebinding between registration and the
 * verification call, the back-off schedule, expiry) and concurrent requests.
 */

const BASE_MS = 1000;
let t: WebhookTestDb;
let keys: SigningKeys;
let clock: ManualClock;
let receiver: Receiver;
const posters: SafePoster[] = [];

beforeAll(async () => {
  t = await openTestDb();
  clock = new ManualClock(Date.UTC(2026, 0, 1));
  keys = await createSigningKeys({ db: t.db, clock, environment: 'sandbox', masterKey: randomBytes(32) });
  receiver = await startReceiver(echoChallenge);
});
afterAll(async () => {
  await Promise.all(posters.map((p) => p.close()));
  await receiver.close();
  await t.close();
});
beforeEach(() => {
  receiver.setHandler(echoChallenge);
  receiver.requests.length = 0;
});

function service(options: { allowInsecure: boolean; resolve?: Resolver }): UrlChangeService {
  const poster = createSafePost({ ...options, timeoutMs: 1000 });
  posters.push(poster);
  return createUrlChangeService({
    db: t.db,
    clock,
    check: (url) => checkUrl(url, options),
    verify: createVerificationSender({ clock, signer: keys, post: poster.post }),
    retryBaseMs: BASE_MS,
    random: () => 0,
  });
}

async function statuses(clientId: string, s: UrlChangeService) {
  return (await s.history(clientId, 10)).map((h) => [h.requestedUrl, h.status]);
}

describe('checks that need a resolver', () => {
  it('a host that does not resolve is 422 unresolvable, and nothing is recorded', async () => {
    const resolve: Resolver = async (host) => {
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    };
    const s = service({ allowInsecure: false, resolve });
    const clientId = await insertClient(t.db);
    const result = await s.requestChange(clientId, 'https://nowhere.example.test/hook');
    expect(result).toEqual({
      ok: false,
      error: 'unresolvable',
      message: expect.stringMatching(/^webhookUrl cannot be resolved: nowhere\.example\.test does not resolve/),
    });
    expect(await s.history(clientId, 10)).toEqual([]);
  });

  it('DNS rebinding: public when registered, loopback when dialled → refused before connecting, 422', async () => {
    const answers = [['8.8.8.8'], ['127.0.0.1']];
    const rebinding: Resolver = async () =>
      (answers.shift() ?? ['127.0.0.1']).map((address) => ({ address, family: 4 as const }));
    const s = service({ allowInsecure: false, resolve: rebinding });
    const clientId = await insertClient(t.db);
    const connections = receiver.connections;
    const result = await s.requestChange(clientId, `https://rebind.example.test:${receiver.port}/hook`);
    expect(result).toEqual({ ok: false, error: 'proof_failed', message: expect.stringMatching(/127\.0\.0\.1/) });
    expect(receiver.connections).toBe(connections);
    expect(await statuses(clientId, s)).toEqual([[`https://rebind.example.test:${receiver.port}/hook`, 'rejected']]);
    expect((await s.state(clientId)).webhookUrl).toBeNull();
  });

  it('stores the URL in its normalised form, so spellings of one URL are one URL', async () => {
    const s = service({ allowInsecure: true });
    const clientId = await insertClient(t.db);
    const spelled = `HTTP://127.0.0.1:${receiver.port}/a/../hook`;
    const first = await s.requestChange(clientId, spelled);
    expect(first).toMatchObject({ ok: true, changed: true, state: { webhookUrl: receiver.url } });
    const again = await s.requestChange(clientId, receiver.url);
    expect(again).toMatchObject({ ok: true, changed: false });
    expect(receiver.requests).toHaveLength(1);
  });
});

describe('background verification', () => {
  it('retries with doubling back-off while unreachable, then applies the URL when it answers', async () => {
    const s = service({ allowInsecure: true });
    const clientId = await insertClient(t.db);
    receiver.setHandler(hangUp);
    const t0 = clock.now().getTime();
    const put = await s.requestChange(clientId, receiver.url);
    expect(put).toMatchObject({ ok: true, changed: false, state: { webhookUrl: null } });
    const pending = (put as { state: { pendingChange: any } }).state.pendingChange;
    // random() = 0: the n-th retry waits half of base × 2^(n−1).
    expect(Date.parse(pending.nextAttemptAt)).toBe(t0 + BASE_MS / 2);
    expect(pending).toMatchObject({ attempts: 1, expiresAt: new Date(t0 + VERIFICATION_WINDOW_MS).toISOString() });

    expect(await s.processNextVerification()).toBeUndefined();
    clock.advance(BASE_MS / 2);
    expect(await s.processNextVerification()).toBeDefined();
    let state = await s.state(clientId);
    expect(state.pendingChange).toMatchObject({ attempts: 2, lastError: expect.any(String) });
    expect(Date.parse(state.pendingChange!.nextAttemptAt)).toBe(clock.now().getTime() + BASE_MS);

    receiver.setHandler(echoChallenge);
    clock.advance(BASE_MS);
    expect(await s.processNextVerification()).toBeDefined();
    state = await s.state(clientId);
    expect(state).toEqual({ webhookUrl: receiver.url, pendingChange: null });
    expect(receiver.requests.map((r) => r.headers['x-dispersa-delivery-attempt'])).toEqual(['1', '2', '3']);
    expect(await statuses(clientId, s)).toEqual([[receiver.url, 'proven']]);
  });

  it('a request not proven within the window expires, recorded with the last error; the old URL stays', async () => {
    const s = service({ allowInsecure: true });
    const clientId = await insertClient(t.db);
    await s.requestChange(clientId, receiver.url);
    receiver.setHandler(hangUp);
    const other = `${receiver.url}?v=2`;
    const put = await s.requestChange(clientId, other);
    expect(put).toMatchObject({ ok: true, changed: false, state: { webhookUrl: receiver.url } });
    let steps = 0;
    const gaps: number[] = [];
    // Work through the whole window, jumping from one due time to the next.
    for (let i = 0; i < 200 && (await s.state(clientId)).pendingChange !== null; i++) {
      const next = Date.parse((await s.state(clientId)).pendingChange!.nextAttemptAt);
      gaps.push(next - clock.now().getTime());
      clock.set(new Date(Math.max(next, clock.now().getTime())));
      await s.processNextVerification();
      steps++;
    }
    const state = await s.state(clientId);
    expect(state).toEqual({ webhookUrl: receiver.url, pendingChange: null });
    const [latest] = await s.history(clientId, 1);
    expect(latest).toMatchObject({
      requestedUrl: other,
      status: 'expired',
      reason: expect.stringMatching(/^control not proven within 1440 minutes; last error: /),
    });
    // Back-off doubles up to the one-hour cap (with random() = 0 a wait is half of it), then stays there.
    expect(gaps.slice(0, 4)).toEqual([BASE_MS / 2, BASE_MS, 2 * BASE_MS, 4 * BASE_MS]);
    expect(Math.max(...gaps)).toBe(1_800_000);
    // Every step but the last (the expiry) was one more attempt, the first having been made by PUT.
    expect(latest!.attempts).toBe(steps);
    expect(latest!.attempts).toBeGreaterThan(48);
  });

  it('the attempt PUT makes holds a lease: the worker does not verify the same request meanwhile', async () => {
    const s = service({ allowInsecure: true });
    const clientId = await insertClient(t.db);
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    receiver.setHandler((req, res) => void gate.then(() => echoChallenge(req, res)));
    const put = s.requestChange(clientId, receiver.url);
    await new Promise((r) => setTimeout(r, 100));
    clock.advance(30_000);
    expect(await s.processNextVerification()).toBeUndefined();
    release();
    expect(await put).toMatchObject({ ok: true, changed: true });
    expect(receiver.requests).toHaveLength(1);
  });
});

describe('concurrent requests of one client', () => {
  it('two PUTs of different URLs at once: one is proven and active, the other superseded', async () => {
    const s = service({ allowInsecure: true });
    const clientId = await insertClient(t.db);
    const a = `${receiver.url}?a`;
    const b = `${receiver.url}?b`;
    // Slow answers, so that both requests are recorded before either verdict comes back.
    receiver.setHandler((req, res) => void setTimeout(() => echoChallenge(req, res), 150));
    const results = await Promise.all([s.requestChange(clientId, a), s.requestChange(clientId, b)]);
    expect(results.filter((r) => !r.ok)).toEqual([]);
    const history = await s.history(clientId, 10);
    expect(history.map((h) => h.status).sort()).toEqual(['proven', 'superseded']);
    // The later request replaced the earlier one, whose proof then no longer counts.
    expect(history[0]).toMatchObject({ status: 'proven' });
    expect(history[1]).toMatchObject({ status: 'superseded' });
    expect((await s.state(clientId)).webhookUrl).toBe(history[0]!.requestedUrl);
    expect(receiver.requests).toHaveLength(2);
    expect(results.filter((r) => r.ok && r.changed)).toHaveLength(1);
  });
});
