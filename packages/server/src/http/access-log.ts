import { type FastifyReply, type FastifyRequest, LogController } from 'fastify';

/**
 * One access line per request at `info`, where fastify writes two (`incoming request` when it arrives, `request
 * completed` when it is answered). The line written at the answer carries what both said: the request (method, URL,
 * host, remote address), the status, the time it took, and the trace id the answer gives. Half the lines for a log
 * store to keep, and about a tenth less of the server's CPU a signed GET at the default level (docs/performance-log.md,
 * thirty-first session). The arrival line is still written at `debug`, for an operator chasing a request that never
 * completes.
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
