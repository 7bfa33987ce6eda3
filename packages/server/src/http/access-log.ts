import { type FastifyReply, type FastifyRequest, LogController } from 'fastify';

/**
 * One access line per request at `info`, where fastify writes two (`incoming request` when it arrives, `request
 * completed` when it is answered). The line written at the answer carries what both said: the request (method, URL,
 * host, remote address), the status, the time it took, and the trace id the answer gives. Half the lines halves what
 * a node at the default level spends on logging a request and what its log store keeps. The arrival line is still
 * written at `debug`, for an operator chasing a request that never completes.
 */
export class AccessLogController extends LogController {
  override incomingRequest(request: FastifyRequest): void {
    request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error) {
      reply.log.error({ req: request, res: reply, err: error, responseTime: reply.elapsedTime }, 'request errored');
    } else {
      reply.log.info({ req: request, res: reply, responseTime: reply.elapsedTime }, 'request completed');
    }
  }
}
