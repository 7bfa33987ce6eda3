import pino, { type Logger } from 'pino';

/**
 * Fields of an error that may carry what a request sent: the database drivers attach the statement's parameters
 * (PGlite: `params`, `query`) and PostgreSQL's `detail` quotes the values of a violated key; Node's HTTP parser
 * attaches the raw bytes it received (`rawPacket`: headers with API keys, signatures, the admin token).
 */
const UNSAFE_ERROR_FIELDS = [
  'params',
  'parameters',
  'query',
  'queryOptions',
  'detail',
  'where',
  'internalQuery',
  'rawPacket',
  'body',
  'headers',
];

const SQLSTATE = /^[0-9A-Z]{5}$/;

/** A database message may quote the value it refused (`invalid input syntax for type bigint: "..."`). */
function withoutQuotedValues(text: string): string {
  return text.replace(/"[^"]*"/g, '"…"');
}

function cleanError(value: unknown, depth: number): unknown {
  if (value === null || typeof value !== 'object' || depth > 4) return value;
  const out: Record<string, unknown> = { ...(value as Record<string, unknown>) };
  for (const field of UNSAFE_ERROR_FIELDS) delete out[field];
  if (typeof out['code'] === 'string' && SQLSTATE.test(out['code'])) {
    if (typeof out['message'] === 'string') out['message'] = withoutQuotedValues(out['message']);
    if (typeof out['stack'] === 'string') out['stack'] = withoutQuotedValues(out['stack']);
  }
  if (out['cause'] !== undefined) out['cause'] = cleanError(out['cause'], depth + 1);
  return out;
}

/** pino's error serialiser, minus the fields above: what an error log line may show. */
export function serializeError(err: unknown): unknown {
  const serialized = err instanceof Error ? pino.stdSerializers.err(err) : err;
  return cleanError(serialized, 0);
}

/** Structured JSON logs. Secrets never reach them: request headers are not serialised, and known fields are redacted. */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'dispersa' },
      serializers: { err: serializeError, error: serializeError },
      redact: {
        paths: [
          'req.headers.authorization',
          'req.headers["x-api-key"]',
          'req.headers["x-signature"]',
          'apiKey',
          'adminToken',
          'privateKey',
          'privateKeyPem',
          'secret',
          '*.apiKey',
          '*.adminToken',
          '*.privateKey',
          '*.privateKeyPem',
          '*.secret',
          '*.rawPacket',
        ],
        censor: '[redacted]',
      },
    },
    destination,
  );
}
