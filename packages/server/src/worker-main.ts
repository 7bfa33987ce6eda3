import type { Logger } from 'pino';
import { compose } from './compose.ts';
import type { Config } from './config.ts';
import type { Db } from './db/db.ts';

/**
 * `dispersa worker`: the background loops (settlement, interrupted-dispatch recovery, reconciliation, webhook
 * delivery, sandbox rate publisher) without any listener, for deployments that scale them apart from the API.
 * Every loop claims its work with FOR UPDATE SKIP LOCKED, so any number of these may run beside the API processes.
 */
export async function runWorkersOnly(options: {
  config: Config & { adminToken: string };
  db: Db;
  logger: Logger;
}): Promise<{ stop(): Promise<void> }> {
  const composed = await compose(options);
  composed.startWorkers();
  options.logger.info({ env: options.config.env, db: options.db.kind }, 'dispersa workers started');
  return { stop: () => composed.stop() };
}
