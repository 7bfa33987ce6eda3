import type { Logger } from 'pino';
import { type Composed, compose } from './compose.ts';
import type { Config } from './config.ts';
import type { Db } from './db/db.ts';
import { describeDemoSetup, recordDemoAddresses, seedSandboxIfEmpty } from './sandbox/first-start.ts';
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

/** A listener that cannot be opened: the operator's setting is wrong (address in use, not this host's, no right). */
export class ListenError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ListenError';
  }
}

const LISTEN_FAILURES: Record<string, string> = {
  EADDRINUSE: 'address already in use',
  EADDRNOTAVAIL: 'address not available on this host',
  EACCES: 'permission denied',
  ENOTFOUND: 'host name not found',
};

async function listen(app: Composed['publicApp'], host: string, port: number, variables: string): Promise<void> {
  try {
    await app.listen({ host, port });
  } catch (err) {
    const reason = LISTEN_FAILURES[(err as NodeJS.ErrnoException).code ?? ''];
    if (reason === undefined) throw err;
    throw new ListenError(`cannot listen on ${host}:${port}: ${reason} (${variables})`);
  }
}

/** Builds the service on an open database, seeds a fresh sandbox, and starts both listeners and the workers. */
export async function start(options: {
  config: Config & { adminToken: string };
  db: Db;
  logger: Logger;
  clock?: Clock;
  /** Sandbox first start seeding; tests that build their own clients turn it off. Default true. */
  seedDemo?: boolean;
  /** Which background loops to run, by name. Default all. */
  workers?: (name: string) => boolean;
}): Promise<Running> {
  const composed = await compose(options);
  const demo = options.seedDemo === false ? null : await seedSandboxIfEmpty(composed.ctx, composed.seedHooks);
  try {
    await listen(composed.publicApp, options.config.host, options.config.port, 'DISPERSA_HOST, DISPERSA_PORT');
    await listen(
      composed.adminApp,
      options.config.adminHost,
      options.config.adminPort,
      'DISPERSA_ADMIN_HOST, DISPERSA_ADMIN_PORT',
    );
  } catch (err) {
    await composed.stop();
    throw err;
  }
  const baseUrl = urlOf(composed.publicApp.server.address());
  const adminUrl = urlOf(composed.adminApp.server.address());
  if (demo !== null) await recordDemoAddresses(options.config.dataDir, demo, { baseUrl, adminUrl });
  composed.startWorkers(options.workers);
  options.logger.info({ baseUrl, adminUrl, env: options.config.env, db: options.db.kind }, 'dispersa started');
  const banner =
    demo === null
      ? `dispersa ${options.config.env} listening on ${baseUrl} (operator API ${adminUrl})\n`
      : describeDemoSetup(demo, baseUrl, adminUrl, options.config.adminToken);
  return { ...composed, baseUrl, adminUrl, banner };
}
