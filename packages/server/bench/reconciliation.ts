import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import type { Db, Queryable } from '../src/db/db.ts';
import { createEmbeddedDb } from '../src/db/embedded.ts';
import { migrate } from '../src/db/migrate.ts';
import { createPostgresDb } from '../src/db/postgres.ts';
import { ledgerViolations } from '../src/ledger/invariants.ts';
import { bookFunding } from '../src/ledger/ledger.ts';
import type { BankStatementLine, StatementPage, StatementSource } from '../src/rails/rail.ts';
import { batchLinesFor, ingestNextPage } from '../src/reconciliation/ingest.ts';
import { ManualClock } from '../src/shared/clock.ts';

/**
 * Reconciliation throughput: statement lines ingested and matched per second (issue 7's target: 100,000 lines
 * at ≥ 50,000 lines/s on PostgreSQL on a 2-core machine). The payments and fundings the lines name are seeded
 * in bulk SQL first (not timed); the statement comes from an in-memory source in pages of 500 (the bank gateway's
 * default page size), so the timed part is exactly the reconciliation: ingestion, matching, the decisions and their
 * ledger entries and events, the cursor.
 *
 * The statement mixes what a day of a real account looks like: debits confirming payouts the request path had
 * already completed (most lines), funding credits, debits of unknown payments that complete them (each a full
 * ledger transition with its event), clearing-house returns paired with their debit, orphans, unfunded credits
 * and byte-identical double debits.
 *
 * PostgreSQL when DATABASE_URL (or BENCH_DATABASE_URL) is set: a database of its own, dropped afterwards;
 * otherwise the embedded database in memory. Bounded: BENCH_RECON_TIMEOUT_S (default 300).
 * Settings: BENCH_RECON_LINES (default 100000), BENCH_RECON_UNKNOWN_SHARE (share of lines that complete an
 * unknown payment, default 0.002; a fifth of that again in return pairs), BENCH_RECON_PROFILE=1 (time per
 * statement on stderr), BENCH_RECON_KEEP=1 (keep the PostgreSQL database for a look afterwards), BENCH_RECON_PAGE
 * (lines a page, default 500).
 * Run alone: `node --import tsx packages/server/bench/reconciliation.ts`.
 */

export interface ReconciliationBenchResult {
  name: 'reconciliation';
  backend: 'postgres' | 'embedded';
  lines: number;
  seconds: number;
  linesPerSecond: number;
  targetLinesPerSecond: number;
  metTarget: boolean;
  /** Transactions the statement was stored in (pages are read ahead into batches). */
  batches: number;
  /**
   * CPU seconds spent during the timed part by this process and by the database's server processes of this
   * bench's connections (PostgreSQL on this machine only; null otherwise). On a busy machine wall time
   * overstates the cost: lines / (node + database) CPU seconds is what an otherwise idle machine approaches,
   * since the two mostly take turns.
   */
  cpuSeconds: { node: number; nodeMainThread: number; database: number | null };
  linesPerCpuSecond: number | null;
  /**
   * lines / (this process's main-thread busy time + the database's CPU time): the rate on a machine where both
   * get a core whenever they want one and never overlap (they take turns on each statement). A floor for an
   * idle machine, so a fair reading when the bench shares the machine with other load.
   */
  idleMachineEstimateLinesPerSecond: number | null;
  mix: Record<string, number>;
  outcome: Record<string, number>;
  cpus: number;
}

const TARGET = 50_000;
// Lines per page of the statement, as the sandbox bank hands them out on PostgreSQL (rails/sandbox/bank.ts); the
// embedded database's pages under payment load are 100 lines (BENCH_RECON_PAGE=100 reads the statement that way).
const PAGE = Number(process.env['BENCH_RECON_PAGE'] ?? 500);

/** The statement's composition, in lines (sums to `lines`). */
function mixFor(lines: number) {
  const share = (f: number) => Math.floor(lines * f);
  // Debits that finish an unknown payment (each a full ledger transition with its event) and return pairs.
  const unknownShare = Number(process.env['BENCH_RECON_UNKNOWN_SHARE'] ?? 0.002);
  const unknownDebits = share(unknownShare);
  const returnedPairs = share(unknownShare / 5);
  const fundings = share(0.25);
  const orphans = share(0.005);
  const unfunded = share(0.005);
  const doubles = share(0.005);
  const confirmations = lines - unknownDebits - 2 * returnedPairs - fundings - orphans - unfunded - doubles;
  return { confirmations, unknownDebits, returnedPairs, fundings, orphans, unfunded, doubles };
}

function statementSource(lines: BankStatementLine[]): StatementSource {
  return {
    name: 'bench',
    async fetchSince(cursor: string | null): Promise<StatementPage> {
      const from = cursor === null ? 0 : Number(cursor);
      const page = lines.slice(from, from + PAGE);
      return { lines: page, cursor: page.length === 0 ? cursor : String(from + page.length) };
    },
    async balance() {
      return 0n;
    },
  };
}

async function openDb(): Promise<{ db: Db; backend: 'postgres' | 'embedded'; drop: () => Promise<void> }> {
  const base = process.env['BENCH_DATABASE_URL'] ?? process.env['DATABASE_URL'];
  if (!base) {
    const db = await createEmbeddedDb(null);
    return { db, backend: 'embedded', drop: async () => {} };
  }
  const name = `dispersa_bench_recon_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(base);
  url.pathname = `/${name}`;
  const db = createPostgresDb(url.toString());
  return {
    db,
    backend: 'postgres',
    async drop() {
      await db.close();
      if (process.env['BENCH_RECON_KEEP']) return void process.stderr.write(`kept ${url.toString()}\n`);
      const c = new pg.Client({ connectionString: base });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

const ref = (kind: string, i: number) => `B${kind}${i.toString().padStart(9, '0')}`;

/** Seeds the client, the payments and the fundings the statement names, in bulk. */
async function seed(db: Db, mix: ReturnType<typeof mixFor>, at: Date): Promise<void> {
  await db.query("INSERT INTO clients (id, name, currency) VALUES ('cli_bench', 'bench', 'VES')");
  await db.query(
    `INSERT INTO api_keys (id, client_id, environment, key_hash, public_key_spki_pem, public_key_fingerprint)
     VALUES ('key_bench', 'cli_bench', 'sandbox', '\\x00', 'unused', 'unused')`,
  );
  await db.tx((q) =>
    bookFunding(q, { fundingId: 'fnd_bench_float', clientId: 'cli_bench', currency: 'VES', amountMinor: 10n ** 15n }),
  );
  // kind: C completed (confirmed by its debit), U unknown (completed by it), R unknown (returned).
  const insertPayments = async (kind: string, count: number, state: string, sub: string | null, offset: number) => {
    await db.query(
      `INSERT INTO payments (id, seq, client_id, key_id, idempotency_key, fingerprint, state, sub_status, amount_minor,
         currency, rail, account, bank_code, doc_type, doc_number, source_currency, source_amount_minor, rail_reference,
         dispatched_at, unknown_since, created_at, updated_at)
       SELECT 'pay_' || lpad((g + $4::int)::text, 16, '0'), g + $4::int, 'cli_bench', 'key_bench', $1::text || g, 'fp',
              $2::text, $3::text,
              100000 + g, 'VES', 'PM', '04141234567', '0102', 'V', '1', 'VES', 100000 + g,
              'B' || $1::text || lpad(g::text, 9, '0'), $6::timestamptz, CASE WHEN $2 = 'unknown' THEN $6::timestamptz END,
              $6::timestamptz, $6::timestamptz
         FROM generate_series(1, $5::int) AS g`,
      [kind, state, sub, offset, count, at],
    );
  };
  await insertPayments('C', mix.confirmations + mix.doubles, 'completed', null, 0);
  await insertPayments('U', mix.unknownDebits, 'unknown', 'reconciling', 10_000_000);
  await insertPayments('R', mix.returnedPairs, 'unknown', 'at_rail', 20_000_000);
  // The holds of the unknown ones, as placeHold leaves them.
  await db.query(
    `INSERT INTO holds (id, account_id, payment_id, currency, amount_minor)
     SELECT 'hld_' || id, 'client:cli_bench:VES', id, 'VES', amount_minor FROM payments WHERE state = 'unknown'`,
  );
  await db.query(
    `UPDATE ledger_accounts SET available_minor = available_minor
        - (SELECT coalesce(sum(amount_minor), 0) FROM holds WHERE status = 'held')
      WHERE id = 'client:cli_bench:VES'`,
  );
  await db.query(
    `INSERT INTO fundings (id, client_id, amount_minor, currency, reference, created_at)
     SELECT 'fnd_' || g, 'cli_bench', 5000 + g, 'VES', 'BF' || lpad(g::text, 9, '0'), $2
       FROM generate_series(1, $1::int) AS g`,
    [mix.fundings, at],
  );
}

function statement(mix: ReturnType<typeof mixFor>): BankStatementLine[] {
  const out: BankStatementLine[] = [];
  let n = 0;
  const add = (direction: 'debit' | 'credit', amount: number, reference: string, raw?: string) => {
    n++;
    const dc = direction === 'debit' ? 'D' : 'C';
    out.push({
      bankLineId: `BL${n.toString().padStart(10, '0')}`,
      direction,
      amountMinor: BigInt(amount),
      currency: 'VES',
      valueDate: '2026-06-01',
      reference,
      raw: raw ?? `2026-06-01;${dc};${amount};VES;${reference}`,
    });
  };
  // Interleaved, as a real statement is: every kind spread over every page.
  const total = mix.confirmations + mix.unknownDebits + mix.returnedPairs + mix.fundings + mix.orphans + mix.unfunded;
  const queues: [number, (i: number) => void][] = [
    [mix.confirmations, (i) => add('debit', 100000 + i, ref('C', i))],
    [mix.unknownDebits, (i) => add('debit', 100000 + i, ref('U', i))],
    [
      mix.returnedPairs,
      (i) => {
        add('debit', 100000 + i, ref('R', i));
        add('credit', 100000 + i, ref('R', i));
      },
    ],
    [mix.fundings, (i) => add('credit', 5000 + i, `BF${i.toString().padStart(9, '0')}`)],
    [mix.orphans, (i) => add('debit', 700 + i, `ORPHAN${i}`)],
    [mix.unfunded, (i) => add('credit', 800 + i, `UNKNOWN-CREDIT${i}`)],
  ];
  const done = queues.map(() => 0);
  for (let step = 0; step < total; step++) {
    // Round-robin weighted by what is left, deterministic.
    let best = -1;
    let bestLeft = -1;
    queues.forEach(([count], k) => {
      const left = (count - done[k]!) / Math.max(1, count);
      if (done[k]! < count && left > bestLeft) {
        best = k;
        bestLeft = left;
      }
    });
    done[best]! += 1;
    queues[best]![1](done[best]!);
  }
  // Byte-identical copies of confirmed debits (own bank ids), spread over the statement.
  const debits = out.filter((l) => l.reference.startsWith('BC'));
  for (let i = 0; i < mix.doubles; i++) {
    const original = debits[(i * 7919) % debits.length]!;
    const at = Math.floor(((i + 1) * out.length) / (mix.doubles + 1));
    n++;
    out.splice(at, 0, { ...original, bankLineId: `BL${n.toString().padStart(10, '0')}` });
  }
  return out;
}

/** utime + stime of a process in seconds, from /proc; null when not readable (another machine, gone). */
function cpuOfPid(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return null;
  }
}

/** CPU used so far by the server processes serving this database's connections (PostgreSQL on this machine). */
async function databaseCpu(db: Db): Promise<Map<number, number> | null> {
  if (db.kind !== 'postgres') return null;
  const { rows } = await db.query<{ pid: number }>(
    'SELECT pid FROM pg_stat_activity WHERE datname = current_database()',
  );
  const out = new Map<number, number>();
  for (const r of rows) {
    const cpu = cpuOfPid(Number(r.pid));
    if (cpu === null) return null;
    out.set(Number(r.pid), cpu);
  }
  return out;
}

/** BENCH_RECON_PROFILE=1: time spent per statement text, to see where a page goes. */
function profiled(db: Db, totals: Map<string, { ms: number; n: number }>): Db {
  const wrap = (q: Queryable): Queryable => ({
    async query(sql, params) {
      const t = process.hrtime.bigint();
      try {
        return await q.query(sql, params);
      } finally {
        const key = sql.replace(/\s+/g, ' ').trim().slice(0, 70);
        const e = totals.get(key) ?? { ms: 0, n: 0 };
        e.ms += Number(process.hrtime.bigint() - t) / 1e6;
        e.n++;
        totals.set(key, e);
      }
    },
    exec: (sql) => q.exec(sql),
  });
  const base = wrap(db);
  return {
    kind: db.kind,
    query: base.query,
    exec: base.exec,
    tx: (fn, o) => db.tx((q) => fn(wrap(q)), o),
    close: () => db.close(),
  };
}

export async function benchReconciliation(options: { lines?: number } = {}): Promise<ReconciliationBenchResult> {
  const lines = options.lines ?? Number(process.env['BENCH_RECON_LINES'] ?? 100_000);
  const timeoutMs = Number(process.env['BENCH_RECON_TIMEOUT_S'] ?? 300) * 1000;
  const mix = mixFor(lines);
  const { db, backend, drop } = await openDb();
  try {
    await migrate(db);
    const clock = new ManualClock(Date.UTC(2026, 5, 1, 12));
    await seed(db, mix, clock.now());
    const stmt = statement(mix);
    if (stmt.length !== lines) throw new Error(`statement has ${stmt.length} lines, expected ${lines}`);
    const source = statementSource(stmt);
    const logger = { warn: () => {}, error: () => {} };
    // await db.query('ANALYZE');

    const totals = new Map<string, { ms: number; n: number }>();
    const timed = process.env['BENCH_RECON_PROFILE'] ? profiled(db, totals) : db;
    let batches = 0;
    const dbCpuBefore = await databaseCpu(db);
    const nodeCpuBefore = process.cpuUsage();
    const eluBefore = performance.eventLoopUtilization();
    const started = process.hrtime.bigint();
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      // The batch the service uses on this database with nobody waiting (reconciliation/ingest.ts, batchLinesFor).
      const r = await ingestNextPage({
        db: timed,
        clock,
        source,
        logger,
        maxBatchLines: batchLinesFor(db.kind, false),
      });
      if (r.kind === 'caught_up') break;
      if (r.kind !== 'ingested') throw new Error(`unexpected ingestion result ${r.kind}`);
      batches++;
      if (Date.now() > deadline) throw new Error(`reconciliation bench exceeded ${timeoutMs / 1000} s`);
    }
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const nodeCpu = process.cpuUsage(nodeCpuBefore);
    const mainThreadSeconds = performance.eventLoopUtilization(eluBefore).active / 1000;
    const dbCpuAfter = await databaseCpu(db);
    let databaseSeconds: number | null = null;
    if (dbCpuBefore !== null && dbCpuAfter !== null) {
      databaseSeconds = 0;
      for (const [pid, cpu] of dbCpuAfter) databaseSeconds += cpu - (dbCpuBefore.get(pid) ?? 0);
    }
    const nodeSeconds = (nodeCpu.user + nodeCpu.system) / 1e6;
    if (totals.size > 0) {
      const top = [...totals].sort((a, b) => b[1].ms - a[1].ms).slice(0, 25);
      for (const [sql, t] of top)
        process.stderr.write(`${t.ms.toFixed(0).padStart(7)} ms ${String(t.n).padStart(6)}x  ${sql}\n`);
    }

    const stored = await db.query<{ k: string; n: string }>(
      `SELECT coalesce(match_kind, exception_kind, status) AS k, count(*)::text AS n FROM recon_lines GROUP BY 1 ORDER BY 1`,
    );
    const outcome = Object.fromEntries(stored.rows.map((r) => [r.k, Number(r.n)]));
    const storedTotal = Object.values(outcome).reduce((a, b) => a + b, 0);
    if (storedTotal !== lines) throw new Error(`stored ${storedTotal} lines of ${lines}`);
    const states = await db.query<{ state: string; n: string }>(
      "SELECT state, count(*)::text AS n FROM payments WHERE id LIKE 'pay_%' GROUP BY state",
    );
    for (const s of states.rows) outcome[`payments_${s.state}`] = Number(s.n);
    const violations = await ledgerViolations(db);
    if (violations.length > 0) throw new Error(`ledger unsound after the bench: ${violations.slice(0, 3).join('; ')}`);
    const linesPerSecond = Math.round(lines / seconds);
    return {
      name: 'reconciliation',
      backend,
      lines,
      seconds: Math.round(seconds * 1000) / 1000,
      linesPerSecond,
      targetLinesPerSecond: TARGET,
      metTarget: linesPerSecond >= TARGET,
      batches,
      cpuSeconds: {
        node: Math.round(nodeSeconds * 1000) / 1000,
        nodeMainThread: Math.round(mainThreadSeconds * 1000) / 1000,
        database: databaseSeconds === null ? null : Math.round(databaseSeconds * 1000) / 1000,
      },
      linesPerCpuSecond: databaseSeconds === null ? null : Math.round(lines / (nodeSeconds + databaseSeconds)),
      idleMachineEstimateLinesPerSecond:
        databaseSeconds === null ? null : Math.round(lines / (mainThreadSeconds + databaseSeconds)),
      mix,
      outcome,
      cpus: os.cpus().length,
    };
  } finally {
    await drop();
    if (backend === 'embedded') await db.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  benchReconciliation()
    .then((r) => {
      process.stdout.write(`${JSON.stringify(r, null, 2)}\n`);
    })
    .catch((err: unknown) => {
      process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
      process.exit(1);
    });
}
