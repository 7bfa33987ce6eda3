import { ADMIN_TOKEN } from './test-server.ts';

/** One scrape of GET /metrics, parsed: sample lines of the Prometheus text format, by name and labels. */
export interface Scrape {
  text: string;
  /** The value of the sample with exactly these labels; undefined when absent. */
  value(name: string, labels?: Record<string, string>): number | undefined;
  /** Sum of every sample of the name whose labels include these. */
  sum(name: string, labels?: Record<string, string>): number;
}

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export function parseMetrics(text: string): Scrape {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)/.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  const includes = (s: Sample, labels: Record<string, string>) =>
    Object.entries(labels).every(([k, v]) => s.labels[k] === v);
  return {
    text,
    value(name, labels = {}) {
      const found = samples.find(
        (s) => s.name === name && includes(s, labels) && Object.keys(s.labels).length === Object.keys(labels).length,
      );
      return found?.value;
    },
    sum(name, labels = {}) {
      return samples.filter((s) => s.name === name && includes(s, labels)).reduce((a, s) => a + s.value, 0);
    },
  };
}

export async function scrape(adminUrl: string, token = ADMIN_TOKEN): Promise<Scrape> {
  const res = await fetch(`${adminUrl}/metrics`, { headers: { authorization: `Bearer ${token}` } });
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}: ${await res.text()}`);
  return parseMetrics(await res.text());
}
