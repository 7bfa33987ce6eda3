import pino, { type Logger } from 'pino';

/** Structured JSON logs. Secrets never reach them: request headers are not serialised, and known fields are redacted. */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'dispersa' },
      redact: {
        paths: [
          'req.headers.authorization',
          'req.headers["x-api-key"]',
          'req.headers["x-signature"]',
          '*.apiKey',
          '*.adminToken',
          '*.privateKey',
          '*.privateKeyPem',
          '*.secret',
        ],
        censor: '[redacted]',
      },
    },
    destination,
  );
}
