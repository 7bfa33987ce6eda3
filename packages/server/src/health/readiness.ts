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

/**
 * Whether a failed probe lost its connection rather than found the database down: the backend of a pooled connection
 * was ended (a restart, an administrator), which the pool learns only when it next uses that connection. A new
 * connection may answer at once, so the probe asks again instead of reporting not ready.
 */
function connectionLost(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  // admin_shutdown, crash_shutdown, and the connection_exception class.
  if (code === '57P01' || code === '57P02' || (typeof code === 'string' && code.startsWith('08'))) return true;
  // node-postgres's own errors for a connection that closed under it carry no SQLSTATE.
  return err instanceof Error && code === undefined && /connection terminated|not queryable/i.test(err.message);
}

/** At most this many probes of one check ask again after a lost connection (each one costs a pooled connection). */
const LOST_CONNECTION_RETRIES = 8;

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
    let settled = false;
    const asked = (async (): Promise<ReadinessVerdict> => {
      for (let attempt = 0; ; attempt++) {
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
          if (connectionLost(err) && attempt < LOST_CONNECTION_RETRIES && !settled) continue;
          return { ready: false, reason: `database unavailable: ${err instanceof Error ? err.message : String(err)}` };
        }
      }
    })();
    try {
      return await Promise.race([asked, timeout]);
    } finally {
      settled = true;
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
