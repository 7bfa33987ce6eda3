import { describe, expect, it } from 'vitest';
import {
  ApiError,
  AuthenticationError,
  BusinessRuleError,
  ConflictError,
  DispersaError,
  errorFromResponse,
  InvalidRequestError,
  NotFoundError,
  UnsupportedMediaTypeError,
} from '../src/errors.ts';

describe('errorFromResponse', () => {
  const cases: Array<[number, string, new (...args: never[]) => DispersaError]> = [
    [400, 'amountMinor must be a string', InvalidRequestError],
    [401, 'bad signature', AuthenticationError],
    [404, 'payment not found', NotFoundError],
    [409, 'idempotency-key reused with different content', ConflictError],
    [415, 'body content-type must be application/json', UnsupportedMediaTypeError],
    [422, 'insufficient balance', BusinessRuleError],
    [500, 'internal error', ApiError],
    [502, 'bad gateway', ApiError],
    [503, 'no rate in force for USD/VES', ApiError],
    [403, 'forbidden', DispersaError],
    [429, 'slow down', DispersaError],
  ];
  it.each(cases)('%i becomes the right class with the server text', (status, text, expected) => {
    const error = errorFromResponse(status, { error: text }, 'trace-1');
    expect(error).toBeInstanceOf(expected);
    expect(error).toBeInstanceOf(DispersaError);
    expect(error).toBeInstanceOf(Error);
    expect(error.constructor).toBe(expected);
    expect(error.name).toBe(expected.name);
    expect(error.message).toBe(text);
    expect(error.status).toBe(status);
    expect(error.traceId).toBe('trace-1');
  });

  it('falls back to the status when the body has no error text', () => {
    expect(errorFromResponse(502, undefined).message).toBe('HTTP 502');
    expect(errorFromResponse(502, '<html>bad gateway</html>').message).toBe('<html>bad gateway</html>');
    expect(errorFromResponse(400, { error: 7 }).message).toBe('HTTP 400');
    expect(errorFromResponse(400, { error: 'x', traceId: 'from-body' }).traceId).toBe('from-body');
  });

  it('a 422 carries the failed payment when the body has one, and only then', () => {
    const payment = { intentId: 'pay_1', id: 'pay_1', state: 'failed', subStatus: null, amountMinor: '101' };
    const withPayment = errorFromResponse(422, { error: 'insufficient balance', payload: payment });
    expect(withPayment).toBeInstanceOf(BusinessRuleError);
    expect((withPayment as BusinessRuleError).payment).toEqual(payment);
    expect((withPayment as BusinessRuleError).status).toBe(422);
    const bare = errorFromResponse(422, { error: 'insufficient balance' }) as BusinessRuleError;
    expect(bare.payment).toBeUndefined();
    expect(bare.status).toBe(422);
    const notPayment = errorFromResponse(422, { error: 'x', payload: { webhookUrl: 'https://a' } });
    expect((notPayment as BusinessRuleError).payment).toBeUndefined();
  });
});
