import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/shared/clock.ts';
import { buildVerificationEvent, judgeVerification } from '../../src/webhooks/proof-of-control.ts';
import { createSafePost, type PostResult } from '../../src/webhooks/safe-post.ts';
import { type Receiver, startReceiver } from './helpers.ts';

const clock = new ManualClock(Date.UTC(2026, 0, 2, 3, 4, 5));

describe('buildVerificationEvent', () => {
  it('builds a webhook.verification event with a fresh random challenge', () => {
    const a = buildVerificationEvent(clock);
    const b = buildVerificationEvent(clock);
    const body = JSON.parse(a.body);
    expect(body).toEqual({
      id: a.eventId,
      type: 'webhook.verification',
      test: false,
      createdAt: '2026-01-02T03:04:05.000Z',
      data: { challenge: a.challenge },
    });
    expect(Object.keys(body)).toEqual(['id', 'type', 'test', 'createdAt', 'data']);
    expect(a.challenge).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(b.challenge).not.toBe(a.challenge);
    expect(b.eventId).not.toBe(a.eventId);
  });
});

describe('judgeVerification', () => {
  const challenge = 'abc123';
  const answer = (over: Partial<PostResult>): PostResult => ({
    ok: true,
    statusCode: 200,
    durationMs: 5,
    ...over,
  });

  it.each<[string, PostResult, string]>([
    ['2xx echoing the challenge', answer({ body: '{"challenge":"abc123"}' }), 'proven'],
    [
      '201 echoing it among other fields',
      answer({ statusCode: 201, body: '{"ok":true,"challenge":"abc123"}' }),
      'proven',
    ],
    ['2xx with another challenge', answer({ body: '{"challenge":"abc124"}' }), 'rejected'],
    ['2xx with a longer challenge', answer({ body: '{"challenge":"abc1234"}' }), 'rejected'],
    ['2xx with a non-string challenge', answer({ body: '{"challenge":123}' }), 'rejected'],
    ['2xx with no challenge', answer({ body: '{}' }), 'rejected'],
    ['2xx with JSON that is not an object', answer({ body: '"abc123"' }), 'rejected'],
    ['2xx with null', answer({ body: 'null' }), 'rejected'],
    ['2xx with text', answer({ body: 'abc123' }), 'rejected'],
    ['2xx with an empty body', answer({ statusCode: 204, body: '' }), 'rejected'],
    ['2xx with an oversized body', answer({ errorKind: 'response_too_large', error: 'too large' }), 'rejected'],
    ['500 echoing the challenge', answer({ ok: false, statusCode: 500, body: '{"challenge":"abc123"}' }), 'rejected'],
    ['a redirect', answer({ ok: false, statusCode: 302, body: '' }), 'rejected'],
    ['404', answer({ ok: false, statusCode: 404, body: 'not found' }), 'rejected'],
    ['a forbidden address', { ok: false, errorKind: 'forbidden_address', error: 'x', durationMs: 0 }, 'rejected'],
    ['an invalid target', { ok: false, errorKind: 'invalid_target', error: 'x', durationMs: 0 }, 'rejected'],
    ['a time-out', { ok: false, errorKind: 'timeout', error: 'x', durationMs: 10_000 }, 'pending'],
    ['a time-out after the headers', answer({ errorKind: 'timeout', error: 'x' }), 'pending'],
    ['a refused connection', { ok: false, errorKind: 'network', error: 'ECONNREFUSED', durationMs: 1 }, 'pending'],
  ])('%s → %s', (_name, result, verdict) => {
    expect(judgeVerification(result, challenge).verdict).toBe(verdict);
  });
});

describe('proof of control against a real receiver', () => {
  let receiver: Receiver;
  beforeAll(async () => {
    receiver = await startReceiver((req, res) => {
      const sent = JSON.parse(req.body.toString('utf8')) as { data: { challenge: string } };
      const challenge = req.url === '/wrong' ? 'nope' : sent.data.challenge;
      if (req.url === '/silent') return;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ challenge }));
    });
  });
  afterAll(async () => {
    await receiver.close();
  });

  async function verify(path: string): Promise<string> {
    const poster = createSafePost({ allowInsecure: true, timeoutMs: 300 });
    try {
      const event = buildVerificationEvent(clock);
      const result = await poster.post({
        url: `http://127.0.0.1:${receiver.port}${path}`,
        body: event.body,
        eventId: event.eventId,
        attempt: 1,
        signature: 'x..y',
      });
      return judgeVerification(result, event.challenge).verdict;
    } finally {
      await poster.close();
    }
  }

  it('an echoing receiver proves control; a wrong echo is rejected; silence leaves it pending', async () => {
    expect(await verify('/hook')).toBe('proven');
    expect(await verify('/wrong')).toBe('rejected');
    expect(await verify('/silent')).toBe('pending');
  });
});
