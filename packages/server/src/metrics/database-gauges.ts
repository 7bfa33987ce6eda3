import { Gauge, type Registry } from 'prom-client';
import type { Db, Queryable } from '../db/db.ts';
import { EXCEPTION_KINDS } from '../reconciliation/model.ts';
import type { Clock } from '../shared/clock.ts';

/**
 * Gauges of the deployment's shared state, read from the database when Prometheus scrapes: payments awaiting an
 * outcome, the webhook outbox, open reconciliation exceptions and the bank-versus-ledger balance. Read rather than
 * kept by the workers because the workers of a deployment may run in any process: a value kept in memory would show
 * only on the process that last did the work, and be stale or absent on the others; read here, every process
 * reports the same value (aggregate with max(), not sum()).
 *
 * A scrape must not load the database: every query is an index scan of a partial index that holds only the open
 * rows (payments_open, events_due, recon_exceptions_listing) or a table of one row per currency (recon_balance);
 * they run in one read-only transaction bounded by a statement timeout; and one reading serves every scrape for
 * `cacheMs`, however many scrapers ask, with concurrent scrapes sharing one reading.
 */

export interface DatabaseGaugeOptions {
  db: Db;
  clock: Clock;
  registry: Registry;
  /** How long one reading serves later scrapes. Default 5 s. */
  cacheMs?: number;
  /** Bound of each statement of a reading (PostgreSQL). Default 2 s. */
  statementTimeoutMs?: number;
}

interface OpenPaymentRow {
  state: string;
  sub_status: string | null;
  rail: string;
  n: string;
  oldest_unknown: Date | null;
}

interface Reading {
  openPayments: OpenPaymentRow[];
  outbox: { pending: number; oldestCreatedAt: Date | null };
  exceptions: Map<string, number>;
  balances: {
    currency: string;
    bank: string | null;
    ledger: string | null;
    unexplained: string | null;
    checkedAt: Date | null;
  }[];
  at: Date;
}

async function read(q: Queryable, now: Date): Promise<Reading> {
  const payments = await q.query<OpenPaymentRow>(
    `SELECT state, sub_status, rail, count(*)::text AS n, min(unknown_since) AS oldest_unknown
       FROM payments WHERE state IN ('processing', 'pending', 'unknown')
      GROUP BY state, sub_status, rail`,
  );
  const outbox = await q.query<{ n: string; oldest: Date | null }>(
    `SELECT count(*)::text AS n, min(created_at) AS oldest FROM events WHERE delivery_status = 'pending'`,
  );
  const exceptions = await q.query<{ kind: string; n: string }>(
    `SELECT kind, count(*)::text AS n FROM recon_exceptions WHERE status = 'open' GROUP BY kind`,
  );
  const balances = await q.query<{
    currency: string;
    bank_minor: string | null;
    ledger_minor: string | null;
    unexplained_minor: string | null;
    checked_at: Date | null;
  }>('SELECT currency, bank_minor, ledger_minor, unexplained_minor, checked_at FROM recon_balance ORDER BY currency');
  return {
    openPayments: payments.rows,
    outbox: { pending: Number(outbox.rows[0]?.n ?? 0), oldestCreatedAt: outbox.rows[0]?.oldest ?? null },
    exceptions: new Map(exceptions.rows.map((r) => [r.kind, Number(r.n)])),
    balances: balances.rows.map((r) => ({
      currency: r.currency.trim(),
      bank: r.bank_minor,
      ledger: r.ledger_minor,
      unexplained: r.unexplained_minor,
      checkedAt: r.checked_at,
    })),
    at: now,
  };
}

const seconds = (later: Date, earlier: Date): number => Math.max(0, (later.getTime() - earlier.getTime()) / 1000);

export function registerDatabaseGauges(options: DatabaseGaugeOptions): { reading(): Promise<Reading | null> } {
  const { db, clock, registry } = options;
  const cacheMs = options.cacheMs ?? 5000;
  const timeoutMs = options.statementTimeoutMs ?? 2000;
  const registers = [registry];
  let cached: { at: number; reading: Promise<Reading | null> } | null = null;

  async function fresh(): Promise<Reading | null> {
    try {
      return await db.tx(async (q) => {
        await q.query('SET TRANSACTION READ ONLY');
        await q.query(`SET LOCAL statement_timeout = ${Math.trunc(timeoutMs)}`);
        return read(q, clock.now());
      });
    } catch {
      // The database is down or slow: database_up says so, and the other gauges show nothing rather than old values.
      return null;
    }
  }

  function reading(): Promise<Reading | null> {
    const now = clock.now().getTime();
    if (cached === null || now - cached.at >= cacheMs) cached = { at: now, reading: fresh() };
    return cached.reading;
  }

  new Gauge({
    name: 'dispersa_database_up',
    help: "1 when this process's last reading of the database for these gauges succeeded, 0 otherwise",
    registers,
    async collect() {
      this.set((await reading()) === null ? 0 : 1);
    },
  });
  new Gauge({
    name: 'dispersa_payments_open',
    help: 'Payments not final yet, per state, subStatus (empty when none) and rail',
    labelNames: ['state', 'sub_status', 'rail'] as const,
    registers,
    async collect() {
      this.reset();
      const r = await reading();
      if (r === null) return;
      // The states an alert is written against exist even when empty, so `== 0` and `> 0` both evaluate.
      for (const rail of new Set(['PM', 'CCE', ...r.openPayments.map((p) => p.rail)])) {
        for (const sub of ['reconciling', 'at_rail', 'under_review']) {
          this.set({ state: 'unknown', sub_status: sub, rail }, 0);
        }
      }
      for (const p of r.openPayments) {
        this.set({ state: p.state, sub_status: p.sub_status ?? '', rail: p.rail }, Number(p.n));
      }
    },
  });
  new Gauge({
    name: 'dispersa_payments_unknown_oldest_age_seconds',
    help: 'How long the oldest payment in state unknown has been unknown, per subStatus (0 when none)',
    labelNames: ['sub_status'] as const,
    registers,
    async collect() {
      this.reset();
      const r = await reading();
      if (r === null) return;
      const oldest = new Map<string, Date>();
      for (const p of r.openPayments) {
        if (p.state !== 'unknown' || p.oldest_unknown === null) continue;
        const sub = p.sub_status ?? '';
        const seen = oldest.get(sub);
        if (seen === undefined || p.oldest_unknown < seen) oldest.set(sub, p.oldest_unknown);
      }
      for (const sub of ['reconciling', 'at_rail', 'under_review']) {
        const since = oldest.get(sub);
        this.set({ sub_status: sub }, since === undefined ? 0 : seconds(r.at, since));
      }
    },
  });
  new Gauge({
    name: 'dispersa_outbox_pending_events',
    help: 'Webhook events not delivered yet (due now or waiting for their next attempt)',
    registers,
    async collect() {
      const r = await reading();
      if (r !== null) this.set(r.outbox.pending);
    },
  });
  new Gauge({
    name: 'dispersa_outbox_oldest_pending_age_seconds',
    help: 'Age of the oldest webhook event not delivered yet (0 when none)',
    registers,
    async collect() {
      const r = await reading();
      if (r !== null) this.set(r.outbox.oldestCreatedAt === null ? 0 : seconds(r.at, r.outbox.oldestCreatedAt));
    },
  });
  new Gauge({
    name: 'dispersa_reconciliation_open_exceptions',
    help: 'Open reconciliation exceptions, per kind',
    labelNames: ['kind'] as const,
    registers,
    async collect() {
      this.reset();
      const r = await reading();
      if (r === null) return;
      for (const kind of EXCEPTION_KINDS) this.set({ kind }, r.exceptions.get(kind) ?? 0);
    },
  });
  // Gauge values are floats: exact to 2^53 minor units (90 trillion VES), beyond which only the exception keeps
  // the exact amount.
  const balanceGauge = (
    name: string,
    help: string,
    pick: (b: Reading['balances'][number], at: Date) => number | null,
  ) =>
    new Gauge({
      name,
      help,
      labelNames: ['currency'] as const,
      registers,
      async collect() {
        this.reset();
        const r = await reading();
        if (r === null) return;
        for (const b of r.balances) {
          const value = pick(b, r.at);
          if (value !== null) this.set({ currency: b.currency }, value);
        }
      },
    });
  const num = (v: string | null) => (v === null ? null : Number(v));
  balanceGauge(
    'dispersa_reconciliation_bank_balance_minor',
    "The bank's reported balance at the last balance check, in minor units",
    (b) => num(b.bank),
  );
  balanceGauge(
    'dispersa_reconciliation_ledger_balance_minor',
    "The ledger's bank account at the last balance check, in minor units",
    (b) => num(b.ledger),
  );
  balanceGauge(
    'dispersa_reconciliation_balance_difference_minor',
    'Bank balance minus ledger at the last balance check, in minor units (includes the opening baseline and known timing differences)',
    (b) => (b.bank === null || b.ledger === null ? null : Number(BigInt(b.bank) - BigInt(b.ledger))),
  );
  balanceGauge(
    'dispersa_reconciliation_balance_unexplained_minor',
    'Bank balance minus ledger, baseline and explained differences, in minor units (non-zero: money unaccounted for)',
    (b) => num(b.unexplained),
  );
  balanceGauge('dispersa_reconciliation_balance_checked_age_seconds', 'Time since the last balance check', (b, at) =>
    b.checkedAt === null ? null : seconds(at, b.checkedAt),
  );

  return { reading };
}

/** Pool use of the PostgreSQL connection pool, read from the pool itself (nothing asks the database). */
export function registerPoolGauges(db: Db, registry: Registry): void {
  const stats = db.poolStats?.bind(db);
  if (stats === undefined) return;
  new Gauge({
    name: 'dispersa_db_pool_connections',
    help: 'Database connections of this process, per state: in_use, idle',
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      const s = stats();
      this.set({ state: 'in_use' }, s.total - s.idle);
      this.set({ state: 'idle' }, s.idle);
    },
  });
  new Gauge({
    name: 'dispersa_db_pool_waiting',
    help: 'Queries of this process waiting for a free database connection',
    registers: [registry],
    collect() {
      this.set(stats().waiting);
    },
  });
  new Gauge({
    name: 'dispersa_db_pool_max',
    help: 'Ceiling of database connections of this process',
    registers: [registry],
    collect() {
      this.set(stats().max);
    },
  });
}
