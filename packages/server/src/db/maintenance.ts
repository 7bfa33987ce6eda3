import type { BackgroundWorker } from '../domain.ts';
import type { Clock } from '../shared/clock.ts';
import type { Db } from './db.ts';

/**
 * What autovacuum does for a PostgreSQL server, done for the embedded database, which has none (PGlite runs a
 * single backend). Without it the embedded database never reclaims the rows every update leaves behind, keeps no
 * statistics (so the planner guesses every table's size and distribution), and never freezes old transaction ids,
 * which a long-lived deployment needs before the 32-bit counter wraps. A server database is left to autovacuum.
 *
 * VACUUM (ANALYZE) of the whole database runs on the embedded database's one connection, so requests wait while it
 * runs: it visits only pages changed since the last run, and the interval (DISPERSA_EMBEDDED_VACUUM_MINUTES) keeps
 * that work small. The first run is one interval after start, never during start-up.
 */

export interface MaintenanceLogger {
  info(obj: object, msg: string): void;
}

export function createEmbeddedMaintenance(deps: {
  db: Db;
  clock: Clock;
  intervalMs: number;
  logger: MaintenanceLogger;
}): BackgroundWorker | null {
  const { db, clock, intervalMs, logger } = deps;
  if (db.kind !== 'embedded') return null;
  let nextAt = clock.now().getTime() + intervalMs;
  return {
    name: 'embedded-maintenance',
    // Checked once a minute at most, so a clock moved by tests or an interval shortened to a minute is honoured.
    idleMs: Math.min(intervalMs, 60_000),
    async processNext() {
      const started = clock.now().getTime();
      if (started < nextAt) return undefined;
      const t0 = performance.now();
      await db.exec('VACUUM (ANALYZE)');
      nextAt = clock.now().getTime() + intervalMs;
      logger.info({ durationMs: Math.round(performance.now() - t0) }, 'embedded database vacuumed and analyzed');
      return undefined;
    },
  };
}
