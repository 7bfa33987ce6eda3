import { describe, expect, it } from 'vitest';
import {
  ApiError,
  AuthenticationError,
  BusinessRuleError,
  ConflictError,
  ConnectionError,
  type DispersaError,
  InvalidRequestError,
  NotFoundError,
  UnsupportedMediaTypeError,
} from '../src/errors.ts';
import { fail, ok, type Reply } from './support/fake-server.ts';
import { setup } from './support/harness.ts';

const inline = {
  amountMinor: '150000',
  currency: 'VES',
  rail: 'PM',
  beneficiary: '04141234567',
  bankCode: '0102',
  docType: 'V',
  docNumber: '12345678',
} as const;

const payment = {
  intentId: 'pay_1',
  id: 'pay_1',
  state: 'completed',
  subStatus: null,
  amountMinor: '150000',
};

/** Answers the scripted replies in order, then 200 with `fallback`. */
function script(replies: Reply[], fallback: unknown = payment) {
  return () => replies.shift() ?? ok(fallback);
}

describe('retries', () => {
  it('retries a 500 with the same idempotency-key and body bytes, a new nonce and a new signature', async () => {
    const { server, client } = await setup(script([fail(500, 'internal error'), ok(payment, 201)]));
    expect(await client.payments.create(inline)).toEqual(payment);
    const [first, second] = server.requests;
    expect(server.requests).toHaveLength(2);
    expect(first?.verdict).toBe('accepted');
    expect(second?.verdict).toBe('accepted');
    expect(second?.headers['idempotency-key']).toBe(first?.headers['idempotency-key']);
    expect(first?.headers['idempotency-key']).toBeTruthy();
    expect(second?.body.equals(first?.body ?? Buffer.alloc(0))).toBe(true);
    expect(BigInt(String(second?.headers['x-nonce']))).toBeGreaterThan(BigInt(String(first?.headers['x-nonce'])));
    expect(second?.headers['x-signature']).not.toBe(first?.headers['x-signature']);
  });

  it('keeps a caller-given idempotency-key across retries', async () => {
    const { server, client } = await setup(script([fail(503, 'unavailable'), fail(502, 'bad gateway')]));
    await client.quotes.create({ amountType: 'TARGET', amountMinor: 5000n }, { idempotencyKey: 'quote-9' });
    expect(server.requests.map((r) => r.headers['idempotency-key'])).toEqual(['quote-9', 'quote-9', 'quote-9']);
    expect(server.requests.every((r) => r.verdict === 'accepted')).toBe(true);
  });

  it('retries when the connection drops before an answer, with the same key and body', async () => {
    const { server, client } = await setup(script(['destroy']));
    expect(await client.payments.create(inline)).toEqual(payment);
    expect(server.requests).toHaveLength(2);
    expect(server.requests[1]?.headers['idempotency-key']).toBe(server.requests[0]?.headers['idempotency-key']);
    expect(server.requests[1]?.body.equals(server.requests[0]?.body ?? Buffer.alloc(0))).toBe(true);
  });

  it('gives up after maxRetries with the last 5xx as an ApiError', async () => {
    const { server, client } = await setup(() => fail(503, 'no rate in force for USD/VES'));
    const error = await client.rate().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ status: 503, message: 'no rate in force for USD/VES' });
    expect(server.requests).toHaveLength(3);
  });

  it('honours a per-call maxRetries', async () => {
    const { server, client } = await setup(() => fail(500, 'boom'));
    await expect(client.me({ maxRetries: 0 })).rejects.toBeInstanceOf(ApiError);
    expect(server.requests).toHaveLength(1);
  });

  it('times out a silent server as a ConnectionError', async () => {
    const { server, client } = await setup(() => ({ ...ok(payment), delayMs: 2_000 }), {
      timeoutMs: 100,
      maxRetries: 1,
    });
    const started = Date.now();
    const error = await client.payments.get('pay_1').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectionError);
    expect((error as ConnectionError).message).toMatch(/no answer within 100 ms/);
    expect((error as ConnectionError).status).toBeUndefined();
    expect(server.requests).toHaveLength(2);
    expect(Date.now() - started).toBeLessThan(1_500);
  });

  it('reports a refused connection as a ConnectionError after the retries', async () => {
    const { server, client } = await setup(() => ok({}));
    await server.close();
    await expect(client.me()).rejects.toBeInstanceOf(ConnectionError);
  });

  const finals: Array<[number, string, new (...args: never[]) => DispersaError]> = [
    [400, 'amountMinor must be a string', InvalidRequestError],
    [401, 'bad signature', AuthenticationError],
    [404, 'beneficiary not found', NotFoundError],
    [409, 'idempotency-key reused with different content', ConflictError],
    [415, 'body content-type must be application/json', UnsupportedMediaTypeError],
    [422, 'insufficient balance', BusinessRuleError],
  ];
  it.each(finals)('never retries %i; it becomes %O with the server text', async (status, text, expected) => {
    const { server, client } = await setup(() => fail(status, text));
    const error = await client.payments.create(inline).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(expected);
    expect(error).toMatchObject({ status, message: text });
    expect(server.requests).toHaveLength(1);
  });

  it('re-signs a write refused as a nonce replay once, at once, with a higher nonce and the same key and body', async () => {
    const { server, client } = await setup(script([fail(401, 'nonce replay'), ok(payment, 201)]));
    expect(await client.payments.create(inline, { idempotencyKey: 'op-7' })).toEqual(payment);
    const [first, second] = server.requests;
    expect(server.requests).toHaveLength(2);
    expect(second?.headers['idempotency-key']).toBe('op-7');
    expect(second?.body.equals(first?.body ?? Buffer.alloc(0))).toBe(true);
    expect(BigInt(String(second?.headers['x-nonce']))).toBeGreaterThan(BigInt(String(first?.headers['x-nonce'])));
  });

  it('re-signs a nonce replay only once: a second one reaches the caller', async () => {
    const { server, client } = await setup(() => fail(401, 'nonce replay'));
    const error = await client.me().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AuthenticationError);
    expect(error).toMatchObject({ status: 401, message: 'nonce replay' });
    expect(server.requests).toHaveLength(2);
  });

  it('a nonce replay after a 5xx retry is still re-signed once, and the retry budget is unchanged', async () => {
    const replies = [fail(503, 'unavailable'), fail(401, 'nonce replay'), fail(503, 'unavailable'), ok(payment, 201)];
    const { server, client } = await setup(script(replies));
    expect(await client.payments.create(inline)).toEqual(payment);
    expect(server.requests).toHaveLength(4);
    expect(new Set(server.requests.map((r) => r.headers['idempotency-key'])).size).toBe(1);
  });

  it('a 422 that carries the failed payment exposes it', async () => {
    const failed = { ...payment, state: 'failed', failureCode: 'insufficient_funds' };
    const { client } = await setup(() => ({
      status: 422,
      body: { error: 'insufficient balance', payload: failed },
    }));
    const error = (await client.payments.create(inline).catch((e: unknown) => e)) as BusinessRuleError;
    expect(error).toBeInstanceOf(BusinessRuleError);
    expect(error.payment).toEqual(failed);
  });

  it('a failed payment inside a 2xx is a result, not an error', async () => {
    const failed = { ...payment, state: 'failed', subStatus: 'declined' };
    const { client } = await setup(() => ok(failed, 201));
    expect(await client.payments.create(inline)).toEqual(failed);
  });
});
