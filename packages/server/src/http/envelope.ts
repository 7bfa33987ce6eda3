import type { FastifyReply, FastifyRequest } from 'fastify';

/** `status` is "success" on most endpoints and "ok" on rate and quotes (spec, Conventions). */
export type StatusWord = 'success' | 'ok';

/** The envelope of an answer (spec, Conventions). */
export interface Envelope<P> {
  status: StatusWord;
  traceId: string;
  payload: P;
}

/**
 * Sets the status code and answers the envelope. It sends nothing: the async handler returns it, and Fastify sends
 * it through the route's response schema. Returning the reply after sending it instead would hand Fastify a
 * thenable, whose then() waits for the response to finish (a stream listener and a promise for every request).
 */
export function enveloped<P>(
  request: FastifyRequest,
  reply: FastifyReply,
  payload: P,
  options: { code?: number; word?: StatusWord } = {},
): Envelope<P> {
  reply.code(options.code ?? 200);
  return { status: options.word ?? 'success', traceId: request.id, payload };
}
