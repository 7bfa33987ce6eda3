import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest, LogController } from 'fastify';
import type { Logger } from 'pino';
import { randomId } from '../shared/ids.ts';
import { formatValidationError, HttpError } from './errors.ts';
import './fastify-types.ts';

/**
 * What the public and the operator listener share: JSON bodies kept as raw bytes (the signature covers them),
 * schema validation that names the field, the `{ error }` body for every failure, and a traceId per request.
 */
export function buildFastify(
  logger: Logger,
  options: { bodyLimit?: number; onResponse?: (request: FastifyRequest, reply: FastifyReply) => void } = {},
): FastifyInstance {
  const app: FastifyInstance = Fastify({
    loggerInstance: logger,
    genReqId: () => randomId('tr', 10),
    logController: new LogController({ requestIdLogLabel: 'traceId' }),
    requestIdHeader: false,
    bodyLimit: options.bodyLimit ?? 1024 * 1024,
    // A request that reaches a closing listener on a connection kept alive is served (the database is still open),
    // with `connection: close`, instead of a 503 the client would have to retry.
    return503OnClosing: false,
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
          // The whole 400 text per failing keyword (http/errors.ts), for rules whose wording the spec fixes.
          ajv.addKeyword({ keyword: 'errorText', schemaType: 'object' });
          // A rule across two fields: one string field starts with another (a CCE account with its bankCode).
          ajv.addKeyword({
            keyword: 'startsWithField',
            type: 'object',
            schemaType: 'object',
            validate: (rule: { field: string; prefix: string }, data: Record<string, unknown>) => {
              const value = data[rule.field];
              const prefix = data[rule.prefix];
              return typeof value === 'string' && typeof prefix === 'string' && value.startsWith(prefix);
            },
          });
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
  // From the moment close() begins, every answer, including those of requests already in flight, tells the client
  // not to reuse its connection: it then never sends a request on a socket the server is about to close.
  let draining = false;
  app.addHook('preClose', async () => {
    draining = true;
  });
  // Error bodies are `{ error }` only; the header carries the trace id support asks for on every answer.
  app.addHook('onSend', async (request, reply) => {
    void reply.header('x-trace-id', request.id);
    if (draining) void reply.header('connection', 'close');
  });
  const onResponse = options.onResponse;
  if (onResponse) {
    app.addHook('onResponse', async (request, reply) => onResponse(request, reply));
  }

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
