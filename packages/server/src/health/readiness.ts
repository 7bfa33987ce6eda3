import type { Db } from '../db/db.ts';
import { loadMigrations } from '../db/migrate.ts';

/**
 * Readiness (GET /readyz): ready when the database answers within a bound and holds every migration this release
 * knows, and the process is not shutting down. Liveness (/health) stays a plain 200: a process whose database is
 * down is alive, and restarting it would not bring the database back.
 */
export type ReadinessVerdict = { ready: true } | { ready: false; reason: string };

export interface Readiness {
  check(): Promise<ReadinessVerdict>;
  /** From now on every check answers not ready (shutdown has begun). */
  markStopping(): void;
}

export function createReadiness(options: { db: Db; timeoutMs?: number }): Readiness {
  const timeoutMs = options.timeoutMs ?? 2000;
  let stopping = false;
  let newestKnown: Promise<number> | null = null;
  // Probes that arrive while one is in flight share its answer: a storm of probes is one query.
  let inFlight: Promise<ReadinessVerdict> | null = null;

  async function probe(): Promise<ReadinessVerdict> {
    newestKnown ??= loadMigrations().then((all) => Math.max(0, ...all.map((m) => m.version)));
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<ReadinessVerdict>((resolve) => {
      timer = setTimeout(
        () => resolve({ ready: false, reason: `database did not answer within ${timeoutMs} ms` }),
        timeoutMs,
      );
      timer.unref();
    });
    const asked = (async (): Promise<ReadinessVerdict> => {
      try {
        const { rows } = await options.db.query<{ v: number | null }>(
          'SELECT max(version) AS v FROM schema_migrations',
        );
        const applied = Number(rows[0]?.v ?? 0);
        const known = await newestKnown!;
        if (applied < known)
          return { ready: false, reason: `migrations pending: database at ${applied}, release at ${known}` };
        return { ready: true };
      } catch (err) {
        return { ready: false, reason: `database unavailable: ${err instanceof Error ? err.message : String(err)}` };
      }
    })();
    try {
      return await Promise.race([asked, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  return {
    check() {
      if (stopping) return Promise.resolve({ ready: false, reason: 'shutting down' });
      inFlight ??= probe().finally(() => {
        inFlight = null;
      });
      return inFlight;
    },
    markStopping() {
      stopping = true;
    },
  };
}
