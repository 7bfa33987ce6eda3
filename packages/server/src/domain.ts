import type { FastifyInstance } from 'fastify';
import type { WorkerStep } from './shared/run-worker.ts';

/**
 * What a domain hands the composition root: its routes on either listener and its background loops.
 * compose.ts builds the domains in dependency order and wires them; domains never reach into each other's
 * tables, they call each other's services.
 */
export interface BackgroundWorker {
  name: string;
  /** Does one unit of work; returns an id when it did something, undefined when there was nothing to do. */
  processNext(step?: WorkerStep): Promise<string | undefined>;
  idleMs: number;
  /** The most of the wall time the loop takes while it has a backlog (run-worker.ts); default all of it. */
  busyShare?: number;
}

export interface Domain {
  registerPublicRoutes?(app: FastifyInstance): void;
  registerAdminRoutes?(app: FastifyInstance): void;
  workers?: BackgroundWorker[];
  /** Loops that are not processNext-shaped; must stop when the signal aborts. */
  start?(signal: AbortSignal): void;
  stop?(): Promise<void>;
}
