export { createDispersaClient, type DispersaClient, type DispersaClientOptions } from './client.ts';
export {
  buildEnvelope,
  carriesIdempotencyKey,
  type EnvelopeParts,
  NONCE_PATTERN,
  signEnvelope,
  toSigningKey,
} from './envelope.ts';
export {
  ApiError,
  AuthenticationError,
  BusinessRuleError,
  ConflictError,
  ConnectionError,
  DispersaError,
  errorFromResponse,
  InvalidRequestError,
  NotFoundError,
  type SignatureFailure,
  SignatureVerificationError,
  UnsupportedMediaTypeError,
} from './errors.ts';
export { type FileLockOptions, LockTimeoutError, withFileLock } from './file-lock.ts';
export { createKeyLane, type KeyLane, LANE_WINDOW, type LaneKind, type LaneTicket, sharedKeyLane } from './lane.ts';
export {
  createMemoryNonceGenerator,
  DEFAULT_RESEED_AFTER_MS,
  MAX_NONCE,
  type MemoryNonceOptions,
  type NonceGenerator,
  type NonceState,
  nextNonce,
  sharedMemoryNonceGenerator,
} from './nonce.ts';
export { createFileNonceGenerator, type FileNonceOptions } from './nonce-file.ts';
export { iteratePages } from './pagination.ts';
export {
  isFinalState,
  isSimulated,
  KNOWN_PAYMENT_STATES,
  type KnownPaymentState,
  normalizeState,
  type PaymentState,
} from './payment-state.ts';
export {
  type AttemptOutcome,
  type BackoffOptions,
  backoffMs,
  DEFAULT_BACKOFF,
  shouldRetry,
} from './retry.ts';
export { describeFailure, isNonceReplay, type RequestOptions } from './transport.ts';
export type * from './types.ts';
export {
  createJwksCache,
  DEFAULT_TOLERANCE_SEC,
  type DecodedSignature,
  decodeSignatureHeader,
  type JwksCache,
  type JwksCacheOptions,
  parseEvent,
  SIGNATURE_HEADER,
  signWebhookForTest,
  type VerifiedSignature,
  type VerifyWebhookOptions,
  verifyWebhook,
} from './webhooks.ts';
