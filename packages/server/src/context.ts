import type { Logger } from 'pino';
import type { ApiKeyService } from './auth/api-keys.ts';
import type { Config } from './config.ts';
import type { Db } from './db/db.ts';
import type { Metrics } from './metrics/metrics.ts';
import type { Clock } from './shared/clock.ts';

/** Everything a route or worker may depend on, built once by the composition root (compose.ts). */
export interface AppContext {
  config: Config;
  db: Db;
  clock: Clock;
  logger: Logger;
  version: string;
  keys: ApiKeyService;
  /** The process's metrics; the payment path reports through its PaymentPathMetrics part. */
  metrics: Metrics;
  balances?: { available(q: import('./db/db.ts').Queryable, clientId: string, currency: string): Promise<bigint> };
}
