import type { FastifyReply, FastifyRequest } from 'fastify';

/** `status` is "success" on most endpoints and "ok" on rate and quotes (spec, Conventions). */
export type StatusWord = 'success' | 'ok';

export function sendPayload(
  request: FastifyRequest,
  reply: FastifyReply,
  payload: unknown,
  options: { code?: number; word?: StatusWord } = {},
): FastifyReply {
  return reply.code(options.code ?? 200).send({ status: options.word ?? 'success', traceId: request.id, payload });
}
