import type { Logger } from 'pino';
import { type Composed, compose } from './compose.ts';
import type { Config } from './config.ts';
import type { Db } from './db/db.ts';
import { describeDemoSetup, seedSandboxIfEmpty } from './sandbox/first-start.ts';
import type { Clock } from './shared/clock.ts';

export interface Running extends Composed {
  baseUrl: string;
  adminUrl: string;
  banner: string;
}

function urlOf(address: string | { address: string; port: number } | null): string {
  if (address === null || typeof address === 'string') throw new Error('listener has no TCP address');
  const host = address.address.includes(':') ? `[${address.address}]` : address.address;
  return `http://${host}:${address.port}`;
}

/** Builds the service on an open database, seeds a fresh sandbox, and starts both listeners and the workers. */
export async function start(options: {
  config: Config & { adminToken: string };
  db: Db;
  logger: Logger;
  clock?: Clock;
  /** Sandbox first start seeding; tests that build their own clients turn it off. Default true. */
  seedDemo?: boolean;
}): Promise<Running> {
  const composed = await compose(options);
  const demo = options.seedDemo === false ? null : await seedSandboxIfEmpty(composed.ctx, composed.seedHooks);
  await composed.publicApp.listen({ host: options.config.host, port: options.config.port });
  await composed.adminApp.listen({ host: options.config.adminHost, port: options.config.adminPort });
  const baseUrl = urlOf(composed.publicApp.server.address());
  const adminUrl = urlOf(composed.adminApp.server.address());
  composed.startWorkers();
  options.logger.info({ baseUrl, adminUrl, env: options.config.env, db: options.db.kind }, 'dispersa started');
  const banner =
    demo === null
      ? `dispersa ${options.config.env} listening on ${baseUrl} (operator API ${adminUrl})\n`
      : describeDemoSetup(demo, baseUrl, adminUrl, options.config.adminToken);
  return { ...composed, baseUrl, adminUrl, banner };
}
