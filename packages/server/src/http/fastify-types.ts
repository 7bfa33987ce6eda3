import type { AuthContext } from '../auth/authenticate.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** 'signed': the full authentication chain; absent: public route. */
    auth?: 'signed';
    /** One of the five body routes (text/plain there is 400 "body must be object", not 415). */
    bodyRoute?: boolean;
    /** POST /v2/payments and /v2/quotes: the idempotency-key header fills slot 4 of the envelope. */
    idempotencySlot?: boolean;
    /**
     * POST /v2/payments and GET /v2/payments/{id}: the nonce is consumed by the route's own statement
     * (auth/deferred-nonce.ts).
     */
    deferNonce?: 'transaction';
    /**
     * Operator listener: who may call the route. Absent: the admin token. 'metrics': the admin token or the
     * read-only metrics token. 'open': no token (probes, and the console's static files, which hold no data).
     */
    operatorAccess?: 'metrics' | 'open';
  }
  interface FastifyRequest {
    auth: AuthContext | null;
  }
}
