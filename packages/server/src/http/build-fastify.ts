import Fastify, { type FastifyInstance, LogController } from 'fastify';
import type { Logger } from 'pino';
import { randomId } from '../shared/ids.ts';
import { formatValidationError, HttpError } from './errors.ts';
import './fastify-types.ts';

/**
 * What the public and the operator listener share: JSON bodies kept as raw bytes (the signature covers them),
 * schema validation that names the field, the `{ error }` body for every failure, and a traceId per request.
 */
export function buildFastify(logger: Logger, options: { bodyLimit?: number } = {}): FastifyInstance {
  const app: FastifyInstance = Fastify({
    loggerInstance: logger,
    genReqId: () => randomId('tr', 10),
    logController: new LogController({ requestIdLogLabel: 'traceId' }),
    requestIdHeader: false,
    bodyLimit: options.bodyLimit ?? 1024 * 1024,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    ajv: {
      // verbose: errors carry their schema, so a field's errorMessage can name the rule it broke.
      customOptions: {
        coerceTypes: false,
        removeAdditional: false,
        useDefaults: false,
        allErrors: false,
        verbose: true,
      },
      plugins: [
        // biome-ignore lint/suspicious/noExplicitAny: the ajv instance type is not exported by fastify
        (ajv: any) => {
          ajv.addKeyword({ keyword: 'errorMessage', schemaType: 'string' });
          return ajv;
        },
      ],
    },
    schemaErrorFormatter: (errors, dataVar) => {
      const err = new HttpError(400, formatValidationError(errors as never, dataVar));
      return err;
    },
  }) as unknown as FastifyInstance;

  app.decorateRequest('auth', null);
  // Error bodies are `{ error }` only; the header carries the trace id support asks for on every answer.
  app.addHook('onSend', async (request, reply) => {
    void reply.header('x-trace-id', request.id);
  });

  // Bodies stay raw: the signature covers the exact bytes, and JSON is parsed only after it verifies.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

  app.setNotFoundHandler((_request, reply) => {
    void reply.code(404).send({ error: 'not found' });
  });

  app.setErrorHandler((error, request, reply) => {
    if (error instanceof HttpError) return reply.code(error.statusCode).send({ error: error.message });
    const e = error as { statusCode?: number; code?: string; message: string; validation?: unknown };
    if (e.validation) return reply.code(400).send({ error: e.message });
    if (e.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return reply.code(413).send({ error: 'body too large' });
    if (e.statusCode !== undefined && e.statusCode >= 400 && e.statusCode < 500) {
      return reply.code(e.statusCode).send({ error: e.message });
    }
    request.log.error({ err: error }, 'unhandled error');
    return reply.code(500).send({ error: 'internal error' });
  });

  return app;
}
