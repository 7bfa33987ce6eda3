import type { Payment } from './types.ts';

/**
 * Every failure the SDK reports to its caller. Branch on the class or on `status`, never on `message`: the
 * message is the server's `error` text, which is for people (interface spec, Errors).
 */
export class DispersaError extends Error {
  /** HTTP status; undefined when no response came back (ConnectionError) or none applies (webhooks). */
  readonly status: number | undefined;
  readonly traceId: string | undefined;
  /** The parsed response body, when there was one. */
  readonly body: unknown;

  constructor(message: string, init: { status?: number; traceId?: string; body?: unknown; cause?: unknown } = {}) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = new.target.name;
    this.status = init.status;
    this.traceId = init.traceId;
    this.body = init.body;
  }
}

/** 400: invalid before any money is touched; nothing was created, the same idempotency-key may be reused. */
export class InvalidRequestError extends DispersaError {}

/** 401: key, signature or nonce refused. Resending identically cannot help. */
export class AuthenticationError extends DispersaError {}

/** 404: unknown route or id, another account's id, an archived beneficiary, or no conversion applies. */
export class NotFoundError extends DispersaError {}

/** 409: idempotency-key reused with other content, duplicate beneficiary, no quote room. Do not blind-retry. */
export class ConflictError extends DispersaError {}

/** 415: body without content-type application/json; rejected before authentication. */
export class UnsupportedMediaTypeError extends DispersaError {}

/**
 * 422: a business rule refused the operation. On POST /v2/payments the service has created the payment in state
 * failed (no bank attempt, no debit): resending the same idempotency-key returns it with 200, so adjust the
 * operation and use a new key. The server answers 422 with `{error}` only; `payment` is set when a body does
 * carry the payment.
 */
export class BusinessRuleError extends DispersaError {
  readonly payment: Payment | undefined;
  constructor(
    message: string,
    init: { status?: number; traceId?: string; body?: unknown; payment?: Payment | undefined } = {},
  ) {
    super(message, init);
    this.payment = init.payment;
  }
}

/** 5xx: the service failed or a component is unavailable (503 also: no rate in force). Retryable. */
export class ApiError extends DispersaError {}

/** No HTTP answer: refused connection, reset, DNS, or the client's timeout. Retryable. */
export class ConnectionError extends DispersaError {}

export type SignatureFailure =
  | 'parsed_body'
  | 'malformed_header'
  | 'unsupported_alg'
  | 'unknown_kid'
  | 'invalid_key'
  | 'bad_signature'
  | 'timestamp_outside_tolerance';

/** A webhook delivery whose x-dispersa-signature does not verify; answer it with a non-2xx status. */
export class SignatureVerificationError extends DispersaError {
  readonly reason: SignatureFailure;
  constructor(reason: SignatureFailure, message: string) {
    super(message);
    this.reason = reason;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function paymentIn(body: Record<string, unknown>): Payment | undefined {
  const payload = body['payload'];
  if (!isRecord(payload)) return undefined;
  const candidate = isRecord(payload['payment']) ? payload['payment'] : payload;
  return typeof candidate['state'] === 'string' && typeof candidate['intentId'] === 'string'
    ? (candidate as unknown as Payment)
    : undefined;
}

/** The one place an HTTP error answer becomes a typed error. `body` is the parsed JSON, or text when not JSON. */
export function errorFromResponse(status: number, body: unknown, traceId?: string): DispersaError {
  const record = isRecord(body) ? body : undefined;
  const serverText = record && typeof record['error'] === 'string' ? record['error'] : undefined;
  const message = serverText ?? (typeof body === 'string' && body !== '' ? body.slice(0, 500) : `HTTP ${status}`);
  const trace = traceId ?? (record && typeof record['traceId'] === 'string' ? record['traceId'] : undefined);
  const init = { status, body, ...(trace === undefined ? {} : { traceId: trace }) };
  switch (status) {
    case 400:
      return new InvalidRequestError(message, init);
    case 401:
      return new AuthenticationError(message, init);
    case 404:
      return new NotFoundError(message, init);
    case 409:
      return new ConflictError(message, init);
    case 415:
      return new UnsupportedMediaTypeError(message, init);
    case 422:
      return new BusinessRuleError(message, { ...init, payment: record ? paymentIn(record) : undefined });
  }
  return status >= 500 ? new ApiError(message, init) : new DispersaError(message, init);
}
