import { type FloorResult, floorSpread } from './floor.ts';
import type { BackendResult } from './payments-bench.ts';

/** The bench's console table: one row per back-end and scenario. */

const SCENARIO_LABEL = {
  'create-payment': 'POST /v2/payments',
  'get-payment': 'GET /v2/payments/{id}',
} as const;

const mb = (kb: number | null): string => (kb === null ? '-' : (kb / 1024).toFixed(0));

export function formatTable(results: readonly BackendResult[], floor: readonly FloorResult[] = []): string {
  const header = [
    'backend',
    'scenario',
    'conns',
    'req/s',
    'of floor',
    'p50 ms',
    'p99 ms',
    'max ms',
    'non-2xx',
    'errors',
    'RSS MB before→after',
    'commits/req',
    'CPU ms/req server',
    'postgres',
    'load avg',
  ];
  const rows: string[][] = [header];
  for (const f of floor) {
    rows.push([
      'floor',
      SCENARIO_LABEL[f.scenario],
      '',
      String(f.rps),
      '100 %',
      String(f.p50),
      String(f.p99),
      '',
      '',
      '',
      '',
      '',
      f.cpuMsPerRequest === null ? '-' : f.cpuMsPerRequest.toFixed(2),
      '',
      '',
    ]);
  }
  for (const r of results) {
    for (const s of r.scenarios) {
      rows.push([
        r.backend,
        SCENARIO_LABEL[s.scenario],
        String(s.connections),
        String(s.rps),
        ofFloor(
          s.rps,
          floor.find((f) => f.scenario === s.scenario),
        ),
        String(s.latencyMs.p50),
        String(s.latencyMs.p99),
        String(s.latencyMs.max),
        String(s.non2xx),
        String(s.errors + s.timeouts),
        `${mb(s.rssBeforeKb)}→${mb(s.rssAfterKb)}`,
        s.db === null || s.answered === 0 ? '-' : (s.db.commits / s.answered).toFixed(2),
        msPerRequest(s.serverCpuPercent, s.rps),
        msPerRequest(s.postgresCpuPercent, s.rps),
        String(s.loadAverageBefore),
      ]);
    }
  }
  const widths = header.map((_, c) => Math.max(...rows.map((row) => row[c]!.length)));
  const line = (row: string[]) => row.map((cell, c) => (c < 2 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!)));
  const out = rows.map((row) => line(row).join('  '));
  out.splice(1, 0, widths.map((w) => '-'.repeat(w)).join('  '));
  for (const f of floor.filter((x) => x.measured.length > 1)) {
    out.push(
      `floor ${SCENARIO_LABEL[f.scenario]}: the mean of ${f.measured.join(' (before the service) and ')} (after) req/s, ` +
        `${(100 * floorSpread(f)).toFixed(1)} % apart: a ratio above is as uncertain as that`,
    );
  }
  // Cannot happen while the floor reuses its pool (floor.ts); if it does, the floor is the generator's signing rate.
  for (const f of floor.filter((x) => x.signedInLoop > 0)) {
    out.push(
      `floor ${SCENARIO_LABEL[f.scenario]}: ${f.signedInLoop} requests signed in the generator's loop: the floor is understated`,
    );
  }
  return `${out.join('\n')}\n`;
}

function ofFloor(rps: number, floor: FloorResult | undefined): string {
  if (floor === undefined || floor.rps === 0) return '-';
  return `${((100 * rps) / floor.rps).toFixed(1)} %`;
}

/** CPU per request in ms from a CPU share (% of one core) and a request rate. */
function msPerRequest(cpuPercent: number | null, rps: number): string {
  if (cpuPercent === null || rps === 0) return '-';
  return ((cpuPercent / 100) * (1000 / rps)).toFixed(2);
}
