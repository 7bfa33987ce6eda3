import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { randomId } from '../shared/ids.ts';
import { AccessLogController } from './access-log.ts';
import { formatValidationError, HttpError } from './errors.ts';
import { lazyRequestLogger } from './request-logger.ts';
import './fastify-types.ts';

const FRAMEWORK_MESSAGES: Record<string, string> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported content-type',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'content-length does not match the body',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'body must be object',
  FST_ERR_CTP_BODY_TOO_LARGE: 'body too large',
  FST_ERR_BAD_URL: 'malformed URL',
};

/** SQLSTATE codes of values the database refuses: class 22, the ones a request's value can cause. */
const DATA_ERRORS: Record<string, string> = {
  '22003': 'a number in the request is out of range',
  '22021': 'the request holds text that is not valid',
  '22P05': 'the request holds text that is not valid',
};

const CLIENT_ERRORS: Record<string, [number, string, string]> = {
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request Timeout', 'request timeout'],
  HPE_HEADER_OVERFLOW: [431, 'Request Header Fields Too Large', 'request header fields too large'],
};

/**
 * A request Node's HTTP parser refused never reaches a route: the answer is written on the socket here. The parser's
 * error carries the raw bytes received (`rawPacket`: headers with API keys, signatures, the admin token); only the
 * error's code is logged, never those bytes, and a HEAD request gets no body.
 */
function answerClientError(
  log: FastifyInstance['log'],
  err: Error & { code?: string; rawPacket?: unknown },
  socket: Duplex,
): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, reason, message] = CLIENT_ERRORS[err.code ?? ''] ?? [400, 'Bad Request', 'malformed HTTP request'];
  log.trace({ code: err.code, status }, 'client error');
  const raw = err.rawPacket;
  const isHead = Buffer.isBuffer(raw) && raw.subarray(0, 5).toString('latin1') === 'HEAD ';
  const full = JSON.stringify({ error: message });
  if (socket.writable) {
    // A HEAD answer says how long the body would be, and sends none.
    socket.write(
      `HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(full)}\r\n\r\n${isHead ? '' : full}`,
    );
  }
  socket.destroy();
}

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
    logController: new AccessLogController({ requestIdLogLabel: 'traceId' }),
    childLoggerFactory: lazyRequestLogger,
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
    // A path the router cannot decode (`%ZZ`) or a parameter longer than any id: answered by the one renderer below.
    frameworkErrors: (error, request, frameworkReply) => {
      const reply = (frameworkReply as unknown as FastifyReply).header('x-trace-id', request.id);
      const code = (error as { code?: string }).code;
      if (code === 'FST_ERR_MAX_PARAM_LENGTH') return reply.code(404).send({ error: 'not found' });
      if (code === 'FST_ERR_BAD_URL') return reply.code(400).send({ error: 'malformed URL' });
      return reply.code(400).send({ error: 'bad request' });
    },
    // Malformed HTTP, oversized headers, timeouts: answered on the raw socket, `{ error }` only, no echo.
    clientErrorHandler: function (this: FastifyInstance, err: Error & { code?: string; rawPacket?: unknown }, socket) {
      answerClientError(this.log, err, socket);
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
      // Framework messages may quote the request (a media type, a URL): the answer names the problem only.
      const text = FRAMEWORK_MESSAGES[e.code ?? ''] ?? (STATUS_CODES[e.statusCode] ?? 'bad request').toLowerCase();
      return reply.code(e.statusCode).send({ error: text });
    }
    // Data the database refuses (a value out of range, text it cannot store) came from the request: a 400, never
    // a 5xx a client would retry. The edge rules should have stopped it first; the log says where it slipped by.
    const dataError = DATA_ERRORS[e.code ?? ''];
    if (dataError !== undefined) {
      request.log.warn({ err: error }, 'database refused a value of the request');
      return reply.code(400).send({ error: dataError });
    }
    request.log.error({ err: error }, 'unhandled error');
    return reply.code(500).send({ error: 'internal error' });
  });

  return app;
}
