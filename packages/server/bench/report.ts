import type { BackendResult } from './payments-bench.ts';

/** The bench's console table: one row per back-end and scenario. */

const SCENARIO_LABEL = {
  'create-payment': 'POST /v2/payments',
  'get-payment': 'GET /v2/payments/{id}',
} as const;

const mb = (kb: number | null): string => (kb === null ? '-' : (kb / 1024).toFixed(0));

export function formatTable(results: readonly BackendResult[]): string {
  const header = [
    'backend',
    'scenario',
    'conns',
    'req/s',
    'p50 ms',
    'p99 ms',
    'max ms',
    'non-2xx',
    'errors',
    'RSS MB before→after',
    'commits/req',
  ];
  const rows: string[][] = [header];
  for (const r of results) {
    for (const s of r.scenarios) {
      rows.push([
        r.backend,
        SCENARIO_LABEL[s.scenario],
        String(s.connections),
        String(s.rps),
        String(s.latencyMs.p50),
        String(s.latencyMs.p99),
        String(s.latencyMs.max),
        String(s.non2xx),
        String(s.errors + s.timeouts),
        `${mb(s.rssBeforeKb)}→${mb(s.rssAfterKb)}`,
        s.db === null || s.requests === 0 ? '-' : (s.db.commits / s.requests).toFixed(2),
      ]);
    }
  }
  const widths = header.map((_, c) => Math.max(...rows.map((row) => row[c]!.length)));
  const line = (row: string[]) => row.map((cell, c) => (c < 2 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!)));
  const out = rows.map((row) => line(row).join('  '));
  out.splice(1, 0, widths.map((w) => '-'.repeat(w)).join('  '));
  return `${out.join('\n')}\n`;
}
